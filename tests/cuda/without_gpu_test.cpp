// What the CUDA backend can check on any machine: availability with a reason, the factory's
// refusal, cuDNN descriptor shapes (no GPU needed), status messages, its int extents, and cuBLAS
// loaded on first use.
#include <doctest/doctest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "compute/backend_factory.hpp"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cublas_library.hpp"
#include "compute/cuda/cuda_backend.hpp"
#include "compute/cuda/dnn_descriptors.hpp"

using namespace petra;

TEST_CASE("cuda_available gives a reason whenever it says no") {
  std::string why;
  const bool available = cuda_available(&why);
  if (!available) {
    CHECK_FALSE(why.empty());
    MESSAGE("no GPU here: " << why);
    std::string factory_why;
    CHECK_FALSE(cuda_usable(&factory_why));
    CHECK(factory_why == why);
    CHECK_THROWS_WITH_AS(make_backend(device::parse("cuda:0"), backend_options{}),
                         doctest::Contains("cuda:0 is not usable"), std::invalid_argument);
  } else {
    CHECK(why.empty());
  }
  CHECK(cuda_available(nullptr) == available);  // no reason asked: no crash
}

TEST_CASE("conv descriptors: cuDNN's output extents equal the geometry's, for every RevNet conv") {
  struct conv_case {
    int64_t n, c, h, w, k, r, s;
    int stride, padding;
  };
  const std::vector<conv_case> cases = {{128, 3, 32, 32, 128, 3, 3, 1, 1},  // CIFAR stem (two streams of 64)
                                        {128, 3, 224, 224, 128, 7, 7, 2, 3},  // ImageNet stem
                                        {128, 64, 32, 32, 64, 3, 3, 1, 1},    // basic F
                                        {128, 64, 32, 32, 128, 3, 3, 2, 1},   // downsampling 3×3
                                        {128, 64, 32, 32, 128, 1, 1, 2, 0},   // projection 1×1
                                        {4, 3, 5, 5, 3, 3, 3, 1, 1},          // test sizes
                                        {2, 1, 7, 6, 5, 3, 2, 2, 0}};         // odd, non-square
  for (const conv_case& k : cases) {
    cuda::conv_geometry g;
    g.n = k.n, g.c = k.c, g.h = k.h, g.w = k.w, g.k = k.k, g.r = k.r, g.s = k.s, g.stride = k.stride,
    g.padding = k.padding;
    const cuda::conv_plan plan(g);
    INFO(g.str());
    CHECK(plan.cudnn_output_shape() == g.y_shape());
    CHECK(plan.bias.extents() == std::array<int, 4>{1, static_cast<int>(k.k), 1, 1});
  }
}

TEST_CASE("dnn_cache keeps one plan per shape") {
  cuda::dnn_cache cache;
  cuda::conv_geometry g;
  g.n = 2, g.c = 3, g.h = 8, g.w = 8, g.k = 4, g.r = 3, g.s = 3, g.stride = 1, g.padding = 1;
  cuda::conv_plan& first = cache.conv(g);
  CHECK(&cache.conv(g) == &first);
  g.stride = 2;
  CHECK(&cache.conv(g) != &first);
  CHECK(cache.conv_plans() == 2);
}

TEST_CASE("batch-norm parameter descriptors are (1, C, 1, 1)") {
  const cuda::batch_norm_plan plan(8, 16, 5, 5);
  CHECK(plan.x.extents() == std::array<int, 4>{8, 16, 5, 5});
  CHECK(plan.params.extents() == std::array<int, 4>{1, 16, 1, 1});
}

TEST_CASE("a failed call names the call, the status and what to do") {
  CHECK_THROWS_WITH_AS(PETRA_CUDA_CHECK(cudaErrorMemoryAllocation),
                       doctest::Contains("cudaErrorMemoryAllocation"), std::runtime_error);
  CHECK_THROWS_WITH_AS(PETRA_CUDA_CHECK(cudaErrorMemoryAllocation),
                       doctest::Contains("lower the micro-batch"), std::runtime_error);
  CHECK_THROWS_WITH_AS(PETRA_CUDA_CHECK(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH),
                       doctest::Contains("rejected a shape"), std::runtime_error);
  CHECK_THROWS_WITH_AS(PETRA_CUDA_CHECK(CUBLAS_STATUS_ALLOC_FAILED), doctest::Contains("out of memory"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(PETRA_CUDA_CHECK(cudaErrorNoKernelImageForDevice), doctest::Contains("sm_90"),
                       std::runtime_error);
  // The message quotes the call and its place.
  CHECK_THROWS_WITH_AS(PETRA_CUDA_CHECK(cudaErrorInvalidDevice), doctest::Contains("without_gpu_test.cpp:"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(PETRA_CUDA_CHECK(cudaErrorInvalidDevice), doctest::Contains("nvidia-smi -L"),
                       std::runtime_error);
  CHECK_NOTHROW(PETRA_CUDA_CHECK(cudaSuccess));
  CHECK_NOTHROW(PETRA_CUDA_CHECK(CUDNN_STATUS_SUCCESS));
}

// The ops' preconditions (device, rank, channels) are the interface's, the same for every backend:
// tests/backends/op_checks_test.cpp. What is the CUDA backend's own: cuDNN and cuBLAS take ints.
TEST_CASE("an extent beyond cuDNN's and cuBLAS's int is refused, naming the op") {
  CHECK_THROWS_WITH_AS(cuda::to_int("linear_forward", "N", int64_t{1} << 40),
                       doctest::Contains("linear_forward: N = 1099511627776 does not fit"),
                       std::invalid_argument);
  CHECK(cuda::to_int("linear_forward", "N", 1024) == 1024);
}

namespace {

/// Whether a file whose path contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("cuBLAS is loaded when the CUDA backend first calls it, not when the process starts") {
  // ctest runs each case in a process of its own: here nothing has called cuBLAS yet, and the
  // process, which links the CUDA backend, has not loaded it (nor libcublasLt, whose start-up work
  // every process would pay).
  if (cuda::cublas_loaded()) {
    MESSAGE("an earlier case of this process loaded cuBLAS: only the lookup is checked");
  } else {
    CHECK_FALSE(mapped("libcublas"));
  }
  const cuda::cublas_functions& f = cuda::cublas();
  CHECK(cuda::cublas_loaded());
  CHECK(mapped(cuda::cublas_library_name()));
  CHECK(mapped("libcublasLt"));
  CHECK(&cuda::cublas() == &f);  // loaded once
  for (const void* p :
       {reinterpret_cast<const void*>(f.create), reinterpret_cast<const void*>(f.destroy),
        reinterpret_cast<const void*>(f.set_stream), reinterpret_cast<const void*>(f.set_pointer_mode),
        reinterpret_cast<const void*>(f.set_math_mode), reinterpret_cast<const void*>(f.sgemm),
        reinterpret_cast<const void*>(f.gemm_ex), reinterpret_cast<const void*>(f.sgemm_strided_batched),
        reinterpret_cast<const void*>(f.gemm_strided_batched_ex),
        reinterpret_cast<const void*>(f.status_name), reinterpret_cast<const void*>(f.status_string)})
    CHECK(p != nullptr);
  // Functions that need no GPU answer as cuBLAS does.
  CHECK(std::string(f.status_name(CUBLAS_STATUS_NOT_INITIALIZED)) == "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK_FALSE(std::string(f.status_string(CUBLAS_STATUS_ALLOC_FAILED)).empty());
}

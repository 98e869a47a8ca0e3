// The CUDA backend's construction, the factory, and its memory ops (device buffers, copies).
#include "compute/cuda/cuda_backend.hpp"

#include "compute/cuda/checks.hpp"
#include "compute/cuda/conv_algorithm_registry.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

cuda_backend::cuda_backend(int device_index, math_precision precision, bool deterministic, conv_search search,
                           std::shared_ptr<const conv_algorithm_table> recorded)
    : index_(device_index),
      precision_(precision),
      dnn_(precision == math_precision::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT) {
  policy_.tf32 = precision == math_precision::tf32;
  policy_.bf16 = precision == math_precision::bf16;
  policy_.deterministic = deterministic;
  policy_.search = resolved(search, deterministic);
  policy_.recorded = std::move(recorded);
  context_ = std::make_unique<cuda::device_context>(device_index, policy_.tf32);
}

cuda_backend::~cuda_backend() = default;

std::string cuda_backend::name() const {
  cudaDeviceProp props{};
  std::string gpu = "?";
  if (cudaGetDeviceProperties(&props, index_) == cudaSuccess) gpu = props.name;
  cudaGetLastError();
  return where().str() + " (" + gpu + ", cuDNN " + std::to_string(cudnnGetVersion()) + ", " +
         to_string(precision_) + (policy_.bf16 ? " on tensor cores" : "") +
         (policy_.deterministic ? ", deterministic" : "") + ", " + to_string(policy_.search) +
         " convolution algorithms" + (policy_.recorded ? " after " + policy_.recorded->path : "") + ")";
}

cudaStream_t cuda_backend::stream() const { return context_->stream(); }

void cuda_backend::synchronize_impl() {
  enter();
  context_->synchronize();
}

int64_t cuda_backend::device_bytes_in_use() const {
  return static_cast<int64_t>(cuda_pool_bytes_in_use(index_));
}

std::size_t cuda_pool_bytes_in_use(int device_index) {
  cuda::use_device(device_index);
  cudaMemPool_t pool = cuda::memory_pool(device_index);
  if (!pool) return 0;
  uint64_t used = 0;
  PETRA_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  return static_cast<std::size_t>(used);
}

void cuda_backend::enter() const { cuda::use_device(index_); }

tensor cuda_backend::output(const shape_t& shape) {
  return tensor(shape, context_->allocate(static_cast<std::size_t>(numel_of(shape)) * sizeof(float)));
}

tensor cuda_backend::empty_impl(const shape_t& shape) {
  enter();
  return output(shape);
}

tensor cuda_backend::zeros_impl(const shape_t& shape) {
  enter();
  tensor t = output(shape);
  if (t.numel()) PETRA_CUDA_CHECK(cudaMemsetAsync(t.data(), 0, t.bytes(), stream()));
  return t;
}

void cuda_backend::copy_impl(const tensor& src, tensor& dst) {
  enter();
  if (src.numel() && src.data() != dst.data())
    PETRA_CUDA_CHECK(
        cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, stream()));
}

void cuda_backend::fill_zero_impl(tensor& t) {
  enter();
  if (t.numel()) PETRA_CUDA_CHECK(cudaMemsetAsync(t.data(), 0, t.bytes(), stream()));
}

tensor cuda_backend::gaussian_impl(const shape_t& shape, uint64_t key) {
  enter();
  tensor t = output(shape);
  cuda::kernels::gaussian(t.data(), t.numel(), key, stream());
  return t;
}

std::unique_ptr<backend> make_cuda_backend(int device_index, math_precision precision, bool deterministic,
                                           conv_search search,
                                           std::shared_ptr<const conv_algorithm_table> recorded) {
  return std::make_unique<cuda_backend>(device_index, precision, deterministic, search, std::move(recorded));
}

std::vector<conv_algorithm_record> cuda_conv_algorithm_choices(conv_search search,
                                                               const conv_algorithm_table* recorded) {
  return cuda::registry_choices(search, recorded);
}

}  // namespace petra

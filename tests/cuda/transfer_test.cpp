// Tensors between backends: host ↔ GPU, two backends (two streams) on one GPU, GPU ↔ GPU.
#include "compute/cuda/transfer.hpp"

#include <doctest/doctest.h>

#include "compute/cuda/cuda_backend_impl.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("copy_between: host to GPU and back is exact, and a wrong maker is refused") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(30);
  const tensor x = random_host({4, 5, 6}, rng);
  const tensor on_gpu = copy_between(x, *be.cpu, *be.gpu);
  CHECK(on_gpu.where() == be.gpu->where());
  CHECK(bit_equal(copy_between(on_gpu, *be.gpu, *be.cpu), x));
  CHECK_THROWS_WITH_AS(copy_between(x, *be.gpu, *be.cpu), doctest::Contains("not on cuda:0"),
                       std::invalid_argument);
}

TEST_CASE("two backends on one GPU: a tensor handed over after order_after is read complete") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  auto consumer = make_cuda_backend(0, false, true);
  std::mt19937 rng(31);
  const tensor x = random_host({256, 64, 16, 16}, rng);
  // A long chain on the producer's stream, then the consumer reads the result on its own stream.
  tensor h = be.gpu->from_host(x);
  for (int i = 0; i < 20; ++i) h = be.gpu->add(h, h);
  order_after(*consumer, *be.gpu);
  const tensor y = consumer->relu_forward(h);
  h = tensor{};  // the producer's last handle goes while the consumer may still read it
  tensor expected = x.clone();
  for (int64_t i = 0; i < expected.numel(); ++i)
    expected.data()[i] = std::max(0.f, expected.data()[i] * 1048576.f);
  CHECK(bit_equal(consumer->to_host(y), expected));
  const tensor copied = copy_between(y, *consumer, *be.gpu);
  CHECK(bit_equal(be.gpu->to_host(copied), expected));
}

TEST_CASE("copy_between two GPUs (peer or through the host) is exact") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  int count = 0;
  cudaGetDeviceCount(&count);
  if (count < 2) PETRA_SKIP("needs two GPUs, this machine has " + std::to_string(count));
  auto first = make_cuda_backend(0, false, true);
  auto second = make_cuda_backend(1, false, true);
  std::mt19937 rng(32);
  const tensor x = random_host({3, 1000}, rng);
  const tensor on_first = first->from_host(x);
  const tensor on_second = copy_between(on_first, *first, *second);
  CHECK(on_second.where() == device{device_type::cuda, 1});
  CHECK(bit_equal(second->to_host(on_second), x));
  CHECK(bit_equal(first->to_host(copy_between(on_second, *second, *first)), x));
}

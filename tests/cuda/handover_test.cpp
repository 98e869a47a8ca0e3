// The hand-over between CUDA backends and the host (docs/design.md §5): host round trips through pinned
// memory, two streams on one GPU sharing memory after an event, frees ordered after a consumer's
// work, and two GPUs (peer copy). Each case reports skipped without the GPUs it needs.
#include <doctest/doctest.h>

#include <string>

#include "compute/backend_factory.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/pinned_pool.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// Non-empty when this machine cannot run a test that needs `gpus` GPUs.
std::string skip_reason(int gpus = 1) {
  std::string why;
  if (!cuda_available(&why)) return why;
  int count = 0;
  cudaGetDeviceCount(&count);
  if (count < gpus)
    return "needs " + std::to_string(gpus) + " GPUs, this machine has " + std::to_string(count);
  return {};
}

const device gpu0{device_type::cuda, 0}, gpu1{device_type::cuda, 1}, host{};

tensor scaled(const tensor& x, float factor) {
  tensor out = x.clone();
  for (int64_t i = 0; i < out.numel(); ++i) out.data()[i] *= factor;
  return out;
}

/// x added to zero `times` times in fp32, one rounding per addition as add_inplace rounds (not
/// x × times: that rounds once).
tensor summed(const tensor& x, int times) {
  tensor out = tensor::zeros(x.shape());
  for (int k = 0; k < times; ++k)
    for (int64_t i = 0; i < out.numel(); ++i) out.data()[i] += x.data()[i];
  return out;
}

tensor doubled(backend& be, tensor t, int rounds) {
  for (int i = 0; i < rounds; ++i) t = be.add(t, t);
  return t;
}

}  // namespace

TEST_CASE("GPU and host: round trips through pinned memory are exact, a wrong maker is refused") {
  if (auto why = skip_reason(); !why.empty()) PETRA_SKIP(why);
  cpu_and_gpu be;
  std::mt19937 rng(30);
  const tensor x = random_host({4, 5, 6}, rng);
  const tensor on_gpu = be.gpu->import(be.cpu->export_for(x, gpu0));
  CHECK(on_gpu.where() == gpu0);
  const tensor back = be.gpu->export_for(on_gpu, host);
  CHECK(back.where() == host);
  CHECK(cuda::is_pinned(back));
  CHECK(bit_equal(back, x));
  CHECK(bit_equal(be.gpu->to_host(be.gpu->import(back)), x));  // a pinned tensor is read in place
  CHECK(bit_equal(be.cpu->import(back), x));
  tensor changing = x.clone();
  const tensor staged = be.gpu->from_host(changing);
  changing.data()[0] += 1.f;  // from_host copied it before returning
  CHECK(bit_equal(be.gpu->to_host(staged), x));
  CHECK_THROWS_WITH_AS(be.cpu->import(on_gpu), doctest::Contains("must export it for cpu"),
                       std::invalid_argument);
}

TEST_CASE("two backends on one GPU: no copy, the consumer waits for the producer's event") {
  if (auto why = skip_reason(); !why.empty()) PETRA_SKIP(why);
  cpu_and_gpu be;
  auto consumer = make_cuda_backend(0, math_precision::fp32, true);
  std::mt19937 rng(31);
  const tensor x = random_host({256, 64, 16, 16}, rng);
  // A long chain on the producer's stream; the consumer reads its result on its own stream.
  tensor h = doubled(*be.gpu, be.gpu->from_host(x), 20);
  CHECK_THROWS_WITH_AS(consumer->import(h), doctest::Contains("was not exported"), std::invalid_argument);
  const tensor received = consumer->import(be.gpu->export_for(h, gpu0));
  CHECK(received.shares_storage_with(h));
  const tensor y = consumer->relu_forward(received);
  h = tensor{};  // the producer's last handle goes while the consumer may still read it
  const tensor expected = be.cpu->relu_forward(scaled(x, 1048576.f));
  CHECK(bit_equal(consumer->to_host(y), expected));
  // And back: the consumer's output on the producer's stream.
  CHECK(bit_equal(be.gpu->to_host(be.gpu->import(consumer->export_for(y, gpu0))), expected));
}

TEST_CASE("a free waits for the consumers' work: reused memory is not written under a reader") {
  if (auto why = skip_reason(); !why.empty()) PETRA_SKIP(why);
  auto producer = make_cuda_backend(0, math_precision::fp32, true),
       consumer = make_cuda_backend(0, math_precision::fp32, true);
  producer->synchronize();
  const std::size_t start = cuda_pool_bytes_in_use(0);
  std::mt19937 rng(32);
  const tensor x = random_host({64, 64, 32, 32}, rng);
  tensor result;
  {
    const tensor h = producer->from_host(x);
    const tensor received = consumer->import(producer->export_for(h, gpu0));
    // The consumer queues much work that reads h, then every handle of h goes: the free is
    // queued on the producer's stream behind an event of the consumer's.
    tensor sum = consumer->zeros(x.shape());
    for (int i = 0; i < 50; ++i) consumer->add_inplace(sum, received);
    result = sum;
  }
  // New memory of the same size on the producer's stream reuses the block once it is free;
  // writing it must not change what the consumer read.
  for (int i = 0; i < 4; ++i) {
    tensor scribble = producer->empty(x.shape());
    producer->fill_zero(scribble);
  }
  CHECK(bit_equal(consumer->to_host(result), summed(x, 50)));
  result = tensor{};
  producer->synchronize();
  consumer->synchronize();
  CHECK(cuda_pool_bytes_in_use(0) == start);
}

TEST_CASE("two GPUs: export records the point, import copies peer to peer (or through the host)") {
  if (auto why = skip_reason(2); !why.empty()) PETRA_SKIP(why);
  auto first = make_cuda_backend(0, math_precision::fp32, true);
  auto second = make_cuda_backend(1, math_precision::fp32, true);
  std::mt19937 rng(33);
  const tensor x = random_host({3, 1000}, rng);
  const tensor on_first = doubled(*first, first->from_host(x), 3);
  const tensor on_second = second->import(first->export_for(on_first, gpu1));
  CHECK(on_second.where() == gpu1);
  CHECK(bit_equal(second->to_host(on_second), scaled(x, 8.f)));
  const tensor back = first->import(second->export_for(second->add(on_second, on_second), gpu0));
  CHECK(back.where() == gpu0);
  CHECK(bit_equal(first->to_host(back), scaled(x, 16.f)));
}

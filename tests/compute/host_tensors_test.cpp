// Host tensors for a consumer device: plain host memory wherever no GPU reads them (cpu, sim:N, and
// cuda:N on a machine or build without a usable GPU).
#include <doctest/doctest.h>

#include <typeinfo>

#include "compute/backend_factory.hpp"

using namespace petra;

namespace {

/// True when `t` is an ordinary host allocation (not pinned, not a device's).
bool plain_host(const tensor& t) { return t.where() == device{} && typeid(*t.buffer()) == typeid(storage); }

}  // namespace

TEST_CASE("host tensors for a cpu or sim consumer are plain host memory, of the asked shape, writable") {
  for (const char* consumer : {"cpu", "sim:0", "sim:3"}) {
    INFO(consumer);
    const host_tensor_maker make = host_tensors_for(device::parse(consumer), std::size_t{1} << 20);
    tensor t = make({2, 3, 4, 5});
    CHECK(t.shape() == shape_t{2, 3, 4, 5});
    CHECK(plain_host(t));
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(i);
    CHECK(t.data()[t.numel() - 1] == 119.f);
    CHECK_FALSE(make({2, 3, 4, 5}).shares_storage_with(t));
  }
}

TEST_CASE("host tensors for cuda:N without a usable GPU fall back to plain host memory") {
  std::string why;
  if (cuda_usable(&why)) return;  // tests/cuda checks the pinned path on a GPU
  const host_tensor_maker make = host_tensors_for(device::parse("cuda:0"), 0);
  const tensor t = make({8, 3, 32, 32});
  CHECK(plain_host(t));
  CHECK(t.numel() == 8 * 3 * 32 * 32);
}

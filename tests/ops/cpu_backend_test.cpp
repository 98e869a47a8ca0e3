// The CPU backend's memory ops and construction.
#include <doctest/doctest.h>

#include <stdexcept>

#include "compute/backend.hpp"

using namespace petra;

TEST_CASE("make_cpu_backend needs at least one thread") {
  CHECK_THROWS_WITH_AS(make_cpu_backend(0), doctest::Contains("threads = 0"), std::invalid_argument);
  auto cpu = make_cpu_backend(2);
  CHECK(cpu->where() == device{});
  CHECK(cpu->name().find("cpu") == 0);
}

TEST_CASE("from_host and to_host make deep copies, copy and fill_zero write in place") {
  auto cpu = make_cpu_backend(1);
  const tensor host = tensor::from_vector({2, 2}, {1, 2, 3, 4});
  const tensor on_device = cpu->from_host(host);
  CHECK_FALSE(on_device.shares_storage_with(host));
  CHECK(on_device.to_vector() == host.to_vector());
  const tensor back = cpu->to_host(on_device);
  CHECK_FALSE(back.shares_storage_with(on_device));

  tensor target = cpu->zeros({2, 2});
  CHECK(target.to_vector() == std::vector<float>(4, 0.f));
  cpu->copy(host, target);
  CHECK(target.to_vector() == host.to_vector());
  cpu->fill_zero(target);
  CHECK(target.to_vector() == std::vector<float>(4, 0.f));
  CHECK(cpu->empty({3, 5}).shape() == shape_t{3, 5});

  tensor wrong = cpu->zeros({4});
  CHECK_THROWS_WITH_AS(cpu->copy(host, wrong), "copy: src (2, 2) and dst (4) must have the same shape",
                       std::invalid_argument);
  CHECK_THROWS_AS(cpu->from_host(tensor()), std::invalid_argument);
}

TEST_CASE("large outputs reuse released buffers and never alias live ones") {
  auto cpu = make_cpu_backend(1);
  const shape_t big{4, 16, 32, 32};  // 256 KiB: pooled
  const float* released = nullptr;
  {
    tensor first = cpu->zeros(big);
    released = first.data();
    const tensor live = cpu->zeros(big);
    CHECK(live.data() != first.data());
  }
  const tensor again = cpu->empty(big);
  const tensor other = cpu->empty(big);
  CHECK((again.data() == released || other.data() == released));
  CHECK(again.data() != other.data());
  // A buffer outlives the backend that made it.
  tensor survivor = cpu->zeros(big);
  cpu.reset();
  survivor.data()[0] = 1.f;
  CHECK(survivor.data()[survivor.numel() - 1] == 0.f);
}

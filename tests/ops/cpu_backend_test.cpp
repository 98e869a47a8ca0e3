// The CPU backend's memory ops, hand-over and construction; device names.
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

TEST_CASE("devices parse and print: cpu, cuda:N, sim:N") {
  CHECK(device::parse("cpu") == device{});
  CHECK(device::parse("cuda:1") == device{device_type::cuda, 1});
  CHECK(device::parse("sim:12") == device{device_type::sim, 12});
  CHECK(device::parse("sim:3").str() == "sim:3");
  for (const char* bad : {"sim:", "sim:x", "sim:-1", "gpu:0", "sim:1000", "cuda0"})
    CHECK_THROWS_WITH_AS(device::parse(bad), doctest::Contains("expected 'cpu', 'cuda:N' or 'sim:N'"),
                         std::invalid_argument);
}

TEST_CASE("the CPU hand-over passes host tensors through and refuses device tensors") {
  auto cpu = make_cpu_backend(1);
  const tensor host = tensor::from_vector({2, 2}, {1, 2, 3, 4});
  for (const device consumer : {device{}, device{device_type::cuda, 0}, device{device_type::sim, 1}})
    CHECK(cpu->export_for(host, consumer).shares_storage_with(host));  // a handle, no copy
  CHECK(cpu->import(host).shares_storage_with(host));
  CHECK_FALSE(cpu->import(tensor{}).defined());
  CHECK_FALSE(cpu->export_for(tensor{}, device{}).defined());
  cpu->synchronize();
  // A tensor that claims a GPU (no memory behind it: only its device is looked at).
  const tensor on_gpu({2, 2}, std::make_shared<storage>(nullptr, 16, device{device_type::cuda, 0}, nullptr));
  CHECK_THROWS_WITH_AS(cpu->import(on_gpu), doctest::Contains("must export it for cpu"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->export_for(on_gpu, device{}), doctest::Contains("only the backend that made it"),
                       std::invalid_argument);
}

TEST_CASE("a sim tensor refuses host access, naming the tensor and the missing hand-over") {
  const tensor on_sim({2, 3}, std::make_shared<storage>(nullptr, 24, device{device_type::sim, 0}, nullptr));
  CHECK_THROWS_WITH_AS(on_sim.data(), doctest::Contains("tensor (2, 3) lives on sim:0"), std::logic_error);
  CHECK_THROWS_WITH_AS(on_sim.to_vector(), doctest::Contains("host tensors only"), std::logic_error);
  CHECK_THROWS_WITH_AS(on_sim.reshaped({6}).data(), doctest::Contains("the hand-over is missing"),
                       std::logic_error);
}

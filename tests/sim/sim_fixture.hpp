// Helpers for the simulated-device tests: a run's sim devices with backends on them beside a CPU
// backend, seeded host tensors, and bit-for-bit comparisons through the hand-over to the host.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "compute/backend_factory.hpp"
#include "compute/parameter.hpp"
#include "compute/sim/sim_devices.hpp"
#include "tests/ops/op_test_helpers.hpp"

namespace petra::testing {

/// The sim devices of one test, and backends on them.
struct sim_run {
  std::shared_ptr<sim_devices> devices = std::make_shared<sim_devices>();

  std::unique_ptr<backend> make(int index, int threads = 1, int latency_us = 0,
                                bool skip_import_wait = false) {
    backend_options o;
    o.threads = threads;
    o.sim = devices;
    o.sim_latency_us = latency_us;
    o.sim_skip_import_wait = skip_import_wait;
    return make_backend(device{device_type::sim, index}, o);
  }
  int64_t bytes_in_use(int index) const { return devices->bytes_in_use(index); }
};

/// Same shape and the same bits (NaNs included), both on the host.
inline bool bit_equal(const tensor& a, const tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  REQUIRE(a.where().type == device_type::cpu);
  REQUIRE(b.where().type == device_type::cpu);
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

/// `t` of `be` on the host, through the hand-over (undefined stays undefined).
inline tensor on_host(backend& be, const tensor& t) { return be.export_for(t, device{}); }

/// Bit-equal after bringing `on_sim` (of `be`) to the host.
inline bool same_bits(backend& be, const tensor& on_sim, const tensor& on_cpu) {
  return bit_equal(on_host(be, on_sim), on_cpu);
}

inline bool same_bits(backend& be, const activation& on_sim, const activation& on_cpu) {
  return same_bits(be, on_sim.x1, on_cpu.x1) && same_bits(be, on_sim.x2, on_cpu.x2);
}

inline activation upload(backend& be, const activation& host) {
  return {be.import(host.x1), be.import(host.x2)};
}

}  // namespace petra::testing

// PaReprop's overlapped backward on reversible transformer blocks: the rebuild of block i − 1 on a
// second backend (CPU) or stream (sim) while block i's gradients run gives the plain order's bits.
#include <doctest/doctest.h>

#include "compute/backend_factory.hpp"
#include "compute/blocks/transformer.hpp"
#include "compute/sim/sim_devices.hpp"
#include "tests/compute/overlap_fixture.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// Three transformer blocks of width 8, 2 heads, on `be`.
std::vector<std::unique_ptr<block>> transformers(backend& be) {
  std::vector<std::unique_ptr<block>> chain;
  for (int b = 0; b < 3; ++b)
    chain.push_back(std::make_unique<transformer_block>(be, "b" + std::to_string(b), 8, 2, 32,
                                                        200 + static_cast<uint64_t>(b)));
  return chain;
}

const activation_shape tokens{{3, 5, 8}, {3, 5, 8}};

}  // namespace

TEST_CASE("overlapped backward, CPU: 3 transformer blocks, bit for bit the plain order") {
  auto plain_be = make_cpu_backend(2);
  const backward_bits plain = run_reversible_stage(*plain_be, nullptr, transformers(*plain_be), tokens);
  auto be = make_cpu_backend(2);
  check_same_bits(plain, run_reversible_stage(*be, make_cpu_backend(1), transformers(*be), tokens));
}

TEST_CASE(
    "overlapped backward, sim device: 3 transformer blocks on two streams equal the CPU's plain order") {
  auto devices = std::make_shared<sim_devices>();
  auto sim_backend = [&](int latency_us) {
    backend_options o;
    o.sim = devices;
    o.sim_latency_us = latency_us;
    return make_backend(device{device_type::sim, 0}, o);
  };
  auto cpu = make_cpu_backend(1);
  const backward_bits reference = run_reversible_stage(*cpu, nullptr, transformers(*cpu), tokens);
  for (auto [stage_latency, rebuild_latency] : {std::pair{0, 0}, {0, 300}, {300, 0}}) {
    CAPTURE(stage_latency);
    CAPTURE(rebuild_latency);
    auto be = sim_backend(stage_latency);
    check_same_bits(reference,
                    run_reversible_stage(*be, sim_backend(rebuild_latency), transformers(*be), tokens));
  }
}

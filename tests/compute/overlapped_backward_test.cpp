// PaReprop's overlapped backward gives the plain order's bits: on the CPU (the rebuild on a second
// backend with its own thread) and on a simulated device (the rebuild on a second stream).
#include <doctest/doctest.h>

#include "compute/backend_factory.hpp"
#include "compute/sim/sim_devices.hpp"
#include "tests/compute/overlap_fixture.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// A backend of sim:0 among `devices` whose ops each wait `latency_us` (a slow stream shows a
/// missing wait: the other stream would read what is not there yet).
std::unique_ptr<backend> sim0_backend(const std::shared_ptr<sim_devices>& devices, int latency_us) {
  backend_options o;
  o.sim = devices;
  o.sim_latency_us = latency_us;
  return make_backend(device{device_type::sim, 0}, o);
}

}  // namespace

TEST_CASE("overlapped backward, CPU: 3 couplings, bit for bit the plain order (1 and 2 stage threads)") {
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    auto plain_be = make_cpu_backend(threads);
    const backward_bits plain = run_coupling_stage(*plain_be, nullptr, 3, 4, 4, 8);
    auto be = make_cpu_backend(threads);
    // The rebuild's ops do not depend on their thread count: one thread or the stage's count alike.
    for (int rebuild_threads : {1, 2}) {
      CAPTURE(rebuild_threads);
      check_same_bits(plain, run_coupling_stage(*be, make_cpu_backend(rebuild_threads), 3, 4, 4, 8));
    }
  }
}

TEST_CASE("overlapped backward, CPU: wide enough for the stage's threads to split work, 4 couplings") {
  auto plain_be = make_cpu_backend(2);
  const backward_bits plain = run_coupling_stage(*plain_be, nullptr, 4, 16, 8, 14);
  auto be = make_cpu_backend(2);
  check_same_bits(plain, run_coupling_stage(*be, make_cpu_backend(1), 4, 16, 8, 14));
}

TEST_CASE("overlapped backward, sim device: two streams with events, bit for bit the plain order") {
  auto devices = std::make_shared<sim_devices>();
  auto sim_backend = [&](int latency_us) { return sim0_backend(devices, latency_us); };
  auto cpu = make_cpu_backend(1);
  const backward_bits reference = run_coupling_stage(*cpu, nullptr, 3, 4, 4, 8);
  auto plain_be = sim_backend(0);
  check_same_bits(reference, run_coupling_stage(*plain_be, nullptr, 3, 4, 4, 8));
  // A slow stream on either side shows a missing wait: the other would read what is not there yet.
  for (auto [stage_latency, rebuild_latency] : {std::pair{0, 0}, {0, 300}, {300, 0}}) {
    CAPTURE(stage_latency);
    CAPTURE(rebuild_latency);
    auto be = sim_backend(stage_latency);
    check_same_bits(reference, run_coupling_stage(*be, sim_backend(rebuild_latency), 3, 4, 4, 8));
  }
}

TEST_CASE("overlap_rebuild is refused where nothing is rebuilt or the stream is elsewhere") {
  auto be = make_cpu_backend(1);
  std::vector<std::unique_ptr<block>> one;
  one.push_back(std::make_unique<coupling_block>(*be, "c", conv_chain::basic(2), 1));
  stage_options keeping;
  keeping.keep_inputs = true;
  stage kept(1, std::move(one), *be, optimizer_settings{}, keeping);
  CHECK_FALSE(kept.can_overlap_rebuild());
  CHECK_THROWS_AS(kept.overlap_rebuild(make_cpu_backend(1)), std::logic_error);
  // One coupling that rebuilds: nothing to overlap inside it, but its rebuild can start ahead.
  std::vector<std::unique_ptr<block>> lone;
  lone.push_back(std::make_unique<coupling_block>(*be, "c", conv_chain::basic(2), 1));
  stage single(1, std::move(lone), *be, optimizer_settings{}, stage_options{});
  CHECK(single.can_overlap_rebuild());

  std::vector<std::unique_ptr<block>> two;
  for (int b = 0; b < 2; ++b)
    two.push_back(std::make_unique<coupling_block>(*be, "c" + std::to_string(b), conv_chain::basic(2), 1));
  stage pair(1, std::move(two), *be, optimizer_settings{}, stage_options{});
  auto devices = std::make_shared<sim_devices>();
  backend_options o;
  o.sim = devices;
  CHECK_THROWS_AS(pair.overlap_rebuild(make_backend(device{device_type::sim, 0}, o)), std::invalid_argument);
  CHECK_FALSE(pair.overlaps_rebuild());
}

TEST_CASE(
    "rebuild started ahead (PaReprop across stages), CPU: taken by its backward, bit for bit the plain "
    "order") {
  for (int blocks : {4, 1}) {  // one coupling: nothing to overlap inside, its one rebuild ahead
    CAPTURE(blocks);
    auto plain_be = make_cpu_backend(2);
    const pipelined_bits plain = run_pipelined(*plain_be, nullptr, ahead_mode::none, blocks);
    CHECK(plain.taken == 0);
    CHECK(plain.ready_calls == 0);  // a stage that does not overlap has its input only at the end
    // Without a second stream there is nothing to start ahead: refused, the same bits.
    auto lone_be = make_cpu_backend(2);
    const pipelined_bits lone = run_pipelined(*lone_be, nullptr, ahead_mode::ahead, blocks);
    CHECK(lone.taken == 0);
    check_same_bits(plain, lone);
    for (ahead_mode mode :
         {ahead_mode::none, ahead_mode::ahead, ahead_mode::from_copy, ahead_mode::weights_read}) {
      CAPTURE(static_cast<int>(mode));
      auto be = make_cpu_backend(2);
      const pipelined_bits run = run_pipelined(*be, make_cpu_backend(2), mode, blocks);
      check_same_bits(plain, run);
      CHECK(run.ready_calls == 5);  // the input before the first block's gradients, every backward
      CHECK(run.taken == (mode == ahead_mode::ahead ? 5 : 0));
    }
  }
}

TEST_CASE("rebuild started ahead, sim device: the second stream waits for the weights, bit for bit") {
  auto devices = std::make_shared<sim_devices>();
  auto sim_backend = [&](int latency_us) { return sim0_backend(devices, latency_us); };
  auto cpu = make_cpu_backend(1);
  const pipelined_bits reference = run_pipelined(*cpu, nullptr, ahead_mode::none);
  for (auto [stage_latency, rebuild_latency] : {std::pair{0, 0}, {0, 300}, {300, 0}}) {
    CAPTURE(stage_latency);
    CAPTURE(rebuild_latency);
    auto be = sim_backend(stage_latency);
    const pipelined_bits run = run_pipelined(*be, sim_backend(rebuild_latency), ahead_mode::ahead);
    check_same_bits(reference, run);
    CHECK(run.taken == 5);
  }
}

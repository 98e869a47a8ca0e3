// A slow pipeline is not a stalled one: the loss actor reports progress often enough in time, not
// only every 16 micro-batches, for the coordinator's stall wait (faults.stall_seconds) to see it.
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("a run slower than 16 micro-batches per stall wait is not taken for a stalled one") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("lockstep", "petra", 256);  // 32 micro-batches
  c.output.metrics_every_steps = 0;                              // progress only from the loss actor
  const trained fast = train_once(c);
  // Stage 2 on a simulated device whose every op waits 3 ms: a tick takes a few tenths of a second
  // (no fault, so no fault event restarts the wait either), 16 micro-batches several times the
  // stall wait of 2 s, while no single tick comes near it.
  c.pipeline.devices = {config::parse_device("cpu"), config::parse_device("sim:0"),
                        config::parse_device("cpu"), config::parse_device("cpu")};
  c.runtime.sim_latency_us = 3000;
  c.faults.stall_seconds = 2;
  trained slow;
  // Before: "no progress for 2 s (faults.stall_seconds): its backward input of tick 10 never came
  // although stage 2 is at tick 11: lost on the link 2 -> 1", a run_failure with nothing lost.
  REQUIRE_NOTHROW(slow = train_once(c));
  CHECK(slow.totals.completed == 32);
  CHECK(differing(fast, slow) == 0);  // slower, not different (the sim device runs the CPU kernels)
}

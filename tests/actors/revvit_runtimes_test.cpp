// A reversible vision transformer in every actor runtime beyond lockstep's own test
// (tests/actors/lockstep_test.cpp): async, stages on a `petra node`, bf16 and forward gradients.
// A small RevViT (runtime_fixture.hpp's small_revvit): J = 5, one block per stage.
#include <cmath>

#include "tests/actors/node_process.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("revvit async: every micro-batch completes once within the credits, and backprop = simulate") {
  PETRA_REQUIRE_FASHION_MNIST();
  const int64_t J = 5, micro_batches = 256 / 8;
  for (const char* method : {"petra", "delayed"}) {
    CAPTURE(method);
    const trained run = train_once(small_revvit("async", method));
    REQUIRE(run.stages.size() == J);
    CHECK(run.totals.micro_batches == micro_batches);
    CHECK(std::isfinite(run.totals.mean_loss()));
    for (int64_t j = 0; j < J; ++j) {
      INFO("stage " << j + 1);
      CHECK(run.stages[j]["backwards"].get<int64_t>() == micro_batches);
      CHECK(run.stages[j]["fifo_peak"].get<int64_t>() <= 2 * J - 1);
      CHECK(run.stages[j]["mailbox_peak"].get<int64_t>() <= 2 * J - 1);
    }
  }
  // One micro-batch in flight: async runs the simulator's operations in its order.
  const trained sim = train_once(small_revvit("simulate", "backprop"));
  const trained async = train_once(small_revvit("async", "backprop"));
  CHECK(differing(sim, async) == 0);
  CHECK(async.totals.loss_sum == sim.totals.loss_sum);
}

TEST_CASE("revvit with two stages on a petra node: lockstep bit-identical to one process") {
  PETRA_REQUIRE_FASHION_MNIST();
  node_process node;
  const trained one = train_once(small_revvit("lockstep", "petra"));
  config::run_config split = small_revvit("lockstep", "petra");
  split.pipeline.nodes = {"local", node.address(), node.address(), "local", "local"};
  const trained two = train_once(split);
  CHECK(differing(one, two) == 0);
  CHECK(two.totals.loss_sum == one.totals.loss_sum);
  CHECK(two.totals.correct == one.totals.correct);
}

TEST_CASE("revvit in bf16 (emulated, any CPU): lockstep = simulate bit for bit, and not the fp32 run") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = small_revvit("simulate", "petra");
  c.runtime.precision = config::compute_precision::bf16_emulated;
  const trained sim = train_once(c);
  c.runtime.mode = config::runtime_mode::lockstep;
  const trained lockstep = train_once(c);
  CHECK(differing(sim, lockstep) == 0);
  CHECK(lockstep.totals.loss_sum == sim.totals.loss_sum);
  const trained fp32 = train_once(small_revvit("simulate", "petra"));
  CHECK(differing(sim, fp32) > 0);  // the attention's and MLP's GEMMs did read bf16 operands
  CHECK(std::fabs(sim.totals.mean_loss() - fp32.totals.mean_loss()) < 0.05);
}

TEST_CASE("revvit with forward gradients: lockstep = simulate bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = small_revvit("simulate", "backprop");
  c.training.method = config::training_method::forward_gradient;
  c.training.forward_gradient.guess = config::gradient_guess::random;
  const trained sim = train_once(c);
  c.runtime.mode = config::runtime_mode::lockstep;
  const trained lockstep = train_once(c);
  CHECK(differing(sim, lockstep) == 0);
  CHECK(lockstep.totals.loss_sum == sim.totals.loss_sum);
}

// Lockstep actor runtime ≡ the reference simulator, bit for bit; delays and FIFO bounds as stamped.
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("lockstep PETRA, J = 4: weights bit-identical to the simulator's") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained sim = train_once(tiny_config("simulate", "petra"));
  const trained actors = train_once(tiny_config("lockstep", "petra"));
  CHECK(differing(sim, actors) == 0);
  CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
  CHECK(actors.totals.correct == sim.totals.correct);
  CHECK(actors.totals.ticks == sim.totals.ticks);
}

TEST_CASE("lockstep delayed with input and weight stash, J = 4: bit-identical to the simulator") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained sim = train_once(tiny_config("simulate", "delayed+inputs+weights"));
  const trained actors = train_once(tiny_config("lockstep", "delayed+inputs+weights"));
  CHECK(differing(sim, actors) == 0);
  CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
}

TEST_CASE("lockstep stamps: stage j's delay is 2(J-j), a kept-input FIFO holds at most 2(J-j)+1") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained run = train_once(tiny_config("lockstep", "petra"));
  const auto& stages = run.totals.stages;
  REQUIRE(stages.size() == 4);
  const int64_t micro_batches = 512 / 8;
  for (int j = 0; j < 4; ++j) {
    INFO("stage " << j + 1);
    const auto& delays = stages[j]["delay_ticks"];
    REQUIRE(delays.size() == 1);
    CHECK(delays.begin().key() == std::to_string(2 * (3 - j)));
    CHECK(delays.begin().value().get<int64_t>() == micro_batches);
  }
  CHECK(stages[0]["fifo_peak"].get<int64_t>() == 7);  // stem: 2(J-1)+1
  CHECK(stages[1]["fifo_peak"].get<int64_t>() == 0);  // two couplings: reversible, nothing kept
  CHECK(stages[2]["fifo_peak"].get<int64_t>() == 3);  // downsampling
  CHECK(stages[3]["fifo_peak"].get<int64_t>() == 1);  // head
  CHECK(stages[1]["inversion_samples"].get<int64_t>() == micro_batches / 4);
}

TEST_CASE("lockstep backprop (J = 1) is plain backprop, equal to the simulator") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config sim_cfg = tiny_config("simulate", "petra");
  sim_cfg.pipeline.stage_blocks = {5};
  config::run_config actor_cfg = sim_cfg;
  actor_cfg.runtime.mode = "lockstep";
  CHECK(differing(train_once(sim_cfg), train_once(actor_cfg)) == 0);
}

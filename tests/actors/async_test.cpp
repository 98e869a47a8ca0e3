// Async actor runtime: credits bound what is in flight; memory stays flat over a long run.
#include <cmath>

#include "tests/actors/runtime_fixture.hpp"
#include "training/tick_schedule.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("async: credits bound the micro-batches in flight, and the run learns") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("async", "petra", 4096);
  c.runtime.credits = 3;
  c.training.optimizer.base_lr = 0.8;  // lr 0.05 at micro-batch 8, k = 2: one short epoch learns
  const trained run = train_once(c);
  CHECK(run.totals.micro_batches == 512);
  const auto& stages = run.stages;
  // The stem keeps the input of every micro-batch in flight: its FIFO peak is the in-flight peak.
  CHECK(stages[0]["fifo_peak"].get<int64_t>() <= 3);
  CHECK(stages[0]["fifo_peak"].get<int64_t>() >= 1);
  for (const auto& s : stages) CHECK(s["mailbox_peak"].get<int64_t>() <= 3);
  // Chance is ln 10 = 2.303 and 10 % accuracy; this run's mean over the epoch is about 1.5 and
  // 42 %: learning shows well clear of chance.
  CHECK(run.totals.mean_loss() < 1.9);
  CHECK(run.totals.accuracy() > 0.3);
}

// In async the schedule is the data's, not the clock's: a stage holds at most what the credits
// let into the pipeline (2J − 1 here), and each micro-batch waits in one mailbox at a time.
TEST_CASE("async, 2,000 micro-batches: FIFO and mailbox peaks stay within the credit bound") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("async", "petra", 16000);
  c.training.micro_batch = 8;
  c.runtime.credits = 0;  // 2J - 1 = 7
  const trained run = train_once(c);
  REQUIRE(run.totals.micro_batches == 2000);
  const auto& stages = run.stages;
  const int64_t J = 4;
  for (int64_t j = 0; j < J; ++j) {
    INFO("stage " << j + 1);
    CHECK(stages[j]["fifo_peak"].get<int64_t>() <= 2 * J - 1);
    CHECK(stages[j]["mailbox_peak"].get<int64_t>() <= 2 * J - 1);
    CHECK(stages[j]["backwards"].get<int64_t>() >= 2000);
  }
}

TEST_CASE("backprop on every runtime: one micro-batch in flight, staleness 0 everywhere, the same weights") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained sim = train_once(tiny_config("simulate", "backprop", 256));
  for (const char* mode : {"simulate", "async", "lockstep"}) {
    const trained run =
        mode == std::string("simulate") ? sim : train_once(tiny_config(mode, "backprop", 256));
    INFO(mode);
    for (const auto& s : run.stages) {
      CHECK(s["staleness_steps"].size() == 1);
      CHECK(s["staleness_steps"].begin().key() == "0");
      CHECK(s["expected_staleness_steps"] == 0.0);
      CHECK(s["fifo_peak"].get<int64_t>() == 0);  // the tape of one micro-batch, no kept inputs
    }
    CHECK(differing(sim, run) == 0);  // one micro-batch at a time: the same ops in the same order
  }
}

// runtime.pacing: stages (the default): stage j starts a training forward only while fewer than
// 2(J − j) + 1 of its micro-batches await their backward, so no stage runs further ahead of its
// backward than in lockstep. Async counts a stage's delay in its own forwards from the one of the
// micro-batch itself, so the bound is that window: 2(J − j) + 1 (lockstep's 2(J − j), plus one).
TEST_CASE("async, pacing by stages: no stage's delay exceeds its window, nor its FIFO") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* method : {"petra", "delayed+inputs+weights"}) {
    CAPTURE(method);
    config::run_config c = tiny_config("async", method, 4096);
    REQUIRE(c.runtime.pacing == config::async_pacing::stages);
    const trained run = train_once(c);
    REQUIRE(run.totals.micro_batches == 512);
    const int64_t J = 4;
    for (int64_t j = 0; j < J; ++j) {
      INFO("stage " << j + 1);
      const int64_t window = fifo_window(static_cast<std::size_t>(j), static_cast<std::size_t>(J));
      int64_t most = -1, count = 0;
      for (const auto& [ticks, n] : run.stages[j]["delay_ticks"].items()) {
        most = std::max<int64_t>(most, std::stoll(ticks));
        count += n.get<int64_t>();
      }
      CHECK(count > 0);
      CHECK(most <= window);
      if (run.stages[j]["fifo_peak"].get<int64_t>() > 0)
        CHECK(run.stages[j]["fifo_peak"].get<int64_t>() <= window);
      CHECK(run.stages[j]["backwards"].get<int64_t>() == 512);
    }
  }
}

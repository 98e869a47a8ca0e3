// Async actor runtime: credits bound what is in flight; memory stays flat over a long run.
#include <cmath>

#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("async: credits bound the micro-batches in flight, and the run learns") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("async", "petra", 1024);
  c.runtime.credits = 3;
  const trained run = train_once(c);
  CHECK(run.totals.micro_batches == 128);
  const auto& stages = run.totals.stages;
  // The stem keeps the input of every micro-batch in flight: its FIFO peak is the in-flight peak.
  CHECK(stages[0]["fifo_peak"].get<int64_t>() <= 3);
  CHECK(stages[0]["fifo_peak"].get<int64_t>() >= 1);
  for (const auto& s : stages) CHECK(s["mailbox_peak"].get<int64_t>() <= 3);
  CHECK(run.totals.mean_loss() < 2.3);
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
  const auto& stages = run.totals.stages;
  const int64_t J = 4;
  for (int64_t j = 0; j < J; ++j) {
    INFO("stage " << j + 1);
    CHECK(stages[j]["fifo_peak"].get<int64_t>() <= 2 * J - 1);
    CHECK(stages[j]["mailbox_peak"].get<int64_t>() <= 2 * J - 1);
    CHECK(stages[j]["backwards"].get<int64_t>() >= 2000);
  }
}

TEST_CASE("backprop on the actor runtimes: one micro-batch in flight, no staleness, the simulator's weights") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained sim = train_once(tiny_config("simulate", "backprop", 256));
  for (const char* mode : {"async", "lockstep"}) {
    const trained run = train_once(tiny_config(mode, "backprop", 256));
    INFO(mode);
    for (const auto& s : run.totals.stages) {
      CHECK(s["staleness_steps"].size() == 1);
      CHECK(s["staleness_steps"].begin().key() == "0");
    }
    CHECK(run.totals.stages[0]["fifo_peak"].get<int64_t>() == 1);
    // Reversible stages rebuild instead of keeping a tape: equal to round-off, not bit for bit.
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < sim.weights.size(); ++i) {
      const tensor& a = sim.weights[i].second;
      const tensor& b = run.weights[i].second;
      for (int64_t k = 0; k < a.numel(); ++k) {
        const double d = static_cast<double>(a.data()[k]) - b.data()[k];
        diff += d * d;
        norm += static_cast<double>(a.data()[k]) * a.data()[k];
      }
    }
    CHECK(std::sqrt(diff / norm) < 1e-5);
  }
}

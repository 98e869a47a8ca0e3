// Adaptive fallback in every runtime: on ci_smoke with a threshold its stages cross, lockstep ≡
// simulate bit for bit, async stays consistent, and a run stopped at a snapshot while stages keep
// their inputs resumes bit for bit.
#include "tests/actors/snapshot_runs.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

// ci_smoke's couplings measure 0.003-0.27 (stage 2) and 0.003-0.044 (stage 3) over the run: both fall
// back, and stage 3 returns to rebuilding as the learning rate decays.
constexpr double smoke_threshold = 0.03;

config::run_config smoke(const std::string& mode, double max_inversion_error) {
  config::run_config c = config::load_config("ci_smoke");
  c.runtime.mode = config::parse_runtime_mode(mode);
  c.runtime.inversion_sample_every = 1;  // 32 samples per stage, windows of 8
  c.training.max_inversion_error = max_inversion_error;
  c.data.test_limit = 64;
  return c;
}

int64_t field(const nlohmann::json& stage, const char* name) { return stage.value(name, int64_t{0}); }

/// Σ over stages of a fallback count.
int64_t total(const trained& run, const char* name) {
  int64_t n = 0;
  for (const auto& s : run.stages) n += field(s, name);
  return n;
}

}  // namespace

TEST_CASE("fallback on ci_smoke: stages switch both ways, lockstep = simulate bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained sim = train_once(smoke("simulate", smoke_threshold));
  const trained actors = train_once(smoke("lockstep", smoke_threshold));
  CHECK(differing(sim, actors) == 0);
  CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
  CHECK(total(sim, "fallback_switches") >= 2);
  CHECK(total(sim, "fallback_forwards") > 0);
  for (std::size_t j = 0; j < sim.stages.size(); ++j) {
    CAPTURE(j);
    CHECK(sim.stages[j].value("fallback_switches", -1) == actors.stages[j].value("fallback_switches", -1));
    CHECK(sim.stages[j].value("fallback_forwards", -1) == actors.stages[j].value("fallback_forwards", -1));
    CHECK(sim.stages[j]["fifo_peak_bytes"] == actors.stages[j]["fifo_peak_bytes"]);
  }
  // The fallback changed the run: without it the same run ends elsewhere.
  CHECK(differing(sim, train_once(smoke("simulate", 0))) > 0);
}

TEST_CASE("fallback on ci_smoke, async: stages switch, every forward's backward in its mode") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained run = train_once(smoke("async", smoke_threshold));
  CHECK(run.totals.completed == 32);
  CHECK(total(run, "fallback_switches") >= 1);
  for (const auto& s : run.stages) {
    CAPTURE(s.dump());
    CHECK(field(s, "fallback_forwards") <= field(s, "forwards"));
    CHECK(s["backwards"] == 32);
  }
}

TEST_CASE("fallback: stopped right after a snapshot while stages keep inputs, resume = uninterrupted") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* mode : {"simulate", "lockstep"})
    for (int stop : {3, 4}) {
      CAPTURE(mode);
      CAPTURE(stop);
      // The tiny preset's coupling stage measures about 0.04: it keeps inputs from its first window
      // on, across every snapshot.
      stop_and_resume(mode, "petra", stop, {"training.max_inversion_error=0.01"},
                      [](const std::filesystem::path& dir) {
                        const auto a = event_lines(dir / "straight", "epoch");
                        const auto b = event_lines(dir / "stopped", "epoch");
                        REQUIRE(a.size() == b.size());
                        int64_t kept = 0;
                        for (std::size_t e = 0; e < a.size(); ++e)
                          for (std::size_t j = 0; j < a[e]["stages"].size(); ++j) {
                            const auto &x = a[e]["stages"][j], &y = b[e]["stages"][j];
                            kept += field(x, "fallback_forwards");
                            CHECK(field(x, "fallback_forwards") == field(y, "fallback_forwards"));
                            CHECK(field(x, "fallback_switches") == field(y, "fallback_switches"));
                          }
                        CHECK(kept > 0);
                      });
    }
}

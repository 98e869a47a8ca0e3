// A drop burst (faults.drop_burst, docs/design.md §6): a stage loses N forward messages in a row on its
// link to the next stage. The phase stalls, the stall is noticed and named, the run rolls back to
// its last snapshot and replays (the burst fires once per run), and every micro-batch is accounted
// for; in lockstep the run ends bit-identical to a clean one.
#include <filesystem>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "tests/actors/metrics_lines.hpp"
#include "tests/actors/run_dirs.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
using petra::app::train_command;
namespace fs = std::filesystem;

namespace {

/// 512 images in 64 micro-batches, a snapshot every 4 optimizer steps, the tiny model on 4 stages.
struct burst_runs : run_dirs {
  burst_runs() : run_dirs("petra-drop-burst-", "512") {}
};

/// The failure lines of a run whose burst lost `burst` messages: each a stall, the first holding
/// every drop (the replays run clean); the summary accounts for every micro-batch.
void check_recovered(const fs::path& run, int64_t burst, int64_t micro_batches) {
  const auto failures = event_lines(run, "failure");
  REQUIRE(!failures.empty());
  MESSAGE("first failure: " << failures[0].dump());
  int64_t dropped = 0;
  for (const auto& f : failures) {
    CHECK(f["kind"] == "stall");
    // A stall is not a lost stage: the run rolls back.
    CHECK(f["recovery"].get<std::string>().rfind("global", 0) == 0);
    dropped += f["faults_injected"].get<int64_t>();
  }
  CHECK(failures[0]["faults_injected"] == burst);
  CHECK(dropped == burst);
  const nlohmann::json counted = event_lines(run, "summary").at(0)["micro_batches"];
  CHECK(counted["restarts"] == static_cast<int64_t>(failures.size()));
  CHECK(counted["completed"] == micro_batches);
  CHECK(counted["lost"] == 0);
  CHECK(counted["faults_injected"] == burst);
}

}  // namespace

TEST_CASE("lockstep drop burst: the stall is named on its link, the run rolls back once, bit-identical") {
  PETRA_REQUIRE_FASHION_MNIST();
  burst_runs runs;
  REQUIRE(train_command({"tiny", runs.sets("lockstep", "clean", {}), "", 0}) == 0);
  // Stage 2 loses its forwards of ticks 10 and 11 (for ticks 11 and 12 at stage 3): a burst of 3 is
  // cut short there, since stage 3 waits at tick 11 and stage 2 runs at most one tick ahead of it.
  REQUIRE(train_command({"tiny",
                         runs.sets("lockstep", "burst",
                                   {"faults.drop_burst=[0,3]", "faults.drop_burst_at_tick=[-1,10]",
                                    "faults.stall_seconds=2"}),
                         "", 0}) == 0);
  check_recovered(runs.root / "burst", 2, 64);
  const auto failure = event_lines(runs.root / "burst", "failure").at(0);
  CHECK(failure["stage"] == 3);
  CHECK(failure["what"].get<std::string>().find("lost on the link 2 -> 3") != std::string::npos);
  CHECK(differing(runs.weights("clean"), runs.weights("burst")) == 0);
}

TEST_CASE(
    "async drop burst: the lost micro-batches fill the stage's bound, the phase stalls and is replayed") {
  PETRA_REQUIRE_FASHION_MNIST();
  burst_runs runs;
  // Stage 3 of 4 loses 3 forwards in a row from its 25th on: they fill its pacing bound
  // 2(J − j) + 1 = 3 of micro-batches awaiting their backward, and the pipeline stops before the
  // marker of the next cut (before micro-batch 32) passes it: no snapshot holds them.
  REQUIRE(train_command({"tiny",
                         runs.sets("async", "burst",
                                   {"faults.drop_burst=[0,0,3]", "faults.drop_burst_at_tick=[-1,-1,25]",
                                    "faults.stall_seconds=2"}),
                         "", 0}) == 0);
  check_recovered(runs.root / "burst", 3, 64);
}

TEST_CASE(
    "drop burst keys: bad values, a last stage and the simulator are refused (exit 2, nothing written)") {
  burst_runs runs;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"faults.drop_burst=[0,-1]"}, "faults.drop_burst"},
      {{"faults.drop_burst=[0,3]"}, "faults.drop_burst"},                   // no tick
      {{"faults.drop_burst_at_tick=[-1,5]"}, "faults.drop_burst_at_tick"},  // no burst
      {{"faults.drop_burst=[0,0,0,3]", "faults.drop_burst_at_tick=[-1,-1,-1,5]"},
       "faults.drop_burst"},  // stage 4 of 4
      {{"runtime.mode=simulate", "faults.drop_burst=[0,3]", "faults.drop_burst_at_tick=[-1,5]"},
       "faults.drop_burst"},
      // Async: shorter than stage 2's bound 2(4 − 2) + 1 = 5, the pipeline would not stop.
      {{"runtime.mode=async", "faults.drop_burst=[0,4]", "faults.drop_burst_at_tick=[-1,5]"},
       "faults.drop_burst"},
  };
  for (const auto& [more, key] : cases) {
    CAPTURE(key);
    std::vector<std::string> s = runs.sets("lockstep", "refused", {});
    s.insert(s.end(), more.begin(), more.end());
    std::stringstream captured;
    auto* old = std::cerr.rdbuf(captured.rdbuf());
    const int code = train_command({"tiny", s, "", 0});
    std::cerr.rdbuf(old);
    CHECK(code == 2);
    CHECK_MESSAGE(captured.str().find(key) != std::string::npos, captured.str());
    CHECK_FALSE(fs::exists(runs.root / "refused"));
  }
}

// Fault injection (DESIGN.md §6) and supervision: each kind changes what it should, and a run
// that loses a stage rolls back, replays and, in lockstep, ends bit-identical to a clean run.
#include <filesystem>
#include <fstream>

#include "app/commands.hpp"
#include "tests/actors/node_process.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

namespace {

int64_t only_delay(const nlohmann::json& stage) {
  REQUIRE(stage["delay_ticks"].size() == 1);
  return std::stoll(stage["delay_ticks"].begin().key());
}

struct run_dirs {
  fs::path root = fs::temp_directory_path() / ("petra-faults-" + std::to_string(::getpid()));
  run_dirs() { fs::remove_all(root); }
  ~run_dirs() { fs::remove_all(root); }
  std::vector<std::string> sets(const std::string& name, std::vector<std::string> more) const {
    std::vector<std::string> s = {"runtime.mode=lockstep", "data.train_limit=256", "data.test_limit=64",
                                  "pipeline.stage_blocks=[1,2,1,1]", "output.checkpoint_every_steps=4",
                                  "output.dir=" + root.string(), "output.name=" + name, "output.progress=false"};
    s.insert(s.end(), more.begin(), more.end());
    return s;
  }
  trained weights(const std::string& name) const {
    trained t;
    t.weights = load_safetensors((root / name / "checkpoint.safetensors").string()).tensors;
    return t;
  }
  nlohmann::json summary(const std::string& name) const {
    std::ifstream in(root / name / "metrics.jsonl");
    nlohmann::json last;
    for (std::string line; std::getline(in, line);) last = nlohmann::json::parse(line);
    return last;
  }
};

}  // namespace

TEST_CASE("lockstep link delays: d extra ticks on stage j's backward link raise its delay by d") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("lockstep", "petra");
  const trained clean = train_once(c);
  c.faults.backward_delay = {0, 3, 0};   // the link stage 3 → stage 2
  c.faults.forward_delay = {0, 0, 2};    // the link stage 3 → stage 4
  const trained delayed = train_once(c);
  const auto& a = clean.totals.stages;
  const auto& b = delayed.totals.stages;
  CHECK(only_delay(b[3]) == only_delay(a[3]));          // the head: forward, loss, backward in one tick
  CHECK(only_delay(b[2]) == only_delay(a[2]) + 2);      // stage 3: its forward link
  CHECK(only_delay(b[1]) == only_delay(a[1]) + 2 + 3);  // stage 2: both
  CHECK(only_delay(b[0]) == only_delay(a[0]) + 2 + 3);
  CHECK(delayed.totals.micro_batches == clean.totals.micro_batches);
}

TEST_CASE("duplicates are discarded by the receiver and change nothing") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("lockstep", "petra");
  const trained clean = train_once(c);
  c.faults.duplicate = {0.5, 0.5, 0.5, 0.5};
  const trained doubled = train_once(c);
  int64_t injected = 0, discarded = 0;
  for (const auto& s : doubled.totals.stages) {
    injected += s.value("injected_duplicates", int64_t{0});
    discarded += s.value("duplicates_discarded", int64_t{0});
  }
  CHECK(injected > 10);
  CHECK(discarded == injected);
  CHECK(differing(clean, doubled) == 0);
}

TEST_CASE("async reorder and jitter: messages overtake each other, the run completes in order") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("async", "petra");
  c.faults.reorder = {0.3, 0.3, 0.3, 0.3};
  c.faults.jitter_ms = {2, 2, 2, 2};
  const trained run = train_once(c);
  int64_t reorders = 0;
  for (const auto& s : run.totals.stages) reorders += s.value("injected_reorders", int64_t{0});
  CHECK(reorders > 5);
  CHECK(run.totals.micro_batches == 64);
  CHECK(run.totals.stages[0]["backwards"].get<int64_t>() >= 64);
}

TEST_CASE("a slow stage is busier by its factor") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("lockstep", "petra");
  const trained clean = train_once(c);
  c.faults.slow = {1, 3, 1, 1};
  const trained slow = train_once(c);
  const double before = clean.totals.stages[1]["busy_seconds"].get<double>();
  const double after = slow.totals.stages[1]["busy_seconds"].get<double>();
  CHECK(after > 2.0 * before);
}

TEST_CASE("crash at a tick: rollback to the last checkpoint, replay, bit-identical to a clean run") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  REQUIRE(app::train_command({"tiny", dirs.sets("clean", {}), "", 0}) == 0);
  REQUIRE(app::train_command({"tiny", dirs.sets("crash", {"faults.crash_at_tick=[-1,-1,4,-1]"}), "", 0}) == 0);
  CHECK(differing(dirs.weights("clean"), dirs.weights("crash")) == 0);
  const auto summary = dirs.summary("crash");
  CHECK(summary["micro_batches"]["restarts"] == 1);
  CHECK(summary["micro_batches"]["replayed"] == 8);
  CHECK(summary["micro_batches"]["completed"] == 32);
}

TEST_CASE("a dropped message stalls the phase; the stall is noticed and the phase replayed") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  REQUIRE(app::train_command({"tiny", dirs.sets("clean", {}), "", 0}) == 0);
  REQUIRE(app::train_command({"tiny", dirs.sets("dropped", {"faults.drop=[0,0.05,0,0]", "faults.stall_seconds=1"}),
                              "", 0}) == 0);
  CHECK(differing(dirs.weights("clean"), dirs.weights("dropped")) == 0);
  const auto summary = dirs.summary("dropped");
  CHECK(summary["micro_batches"]["restarts"].get<int64_t>() >= 1);
  CHECK(summary["micro_batches"]["completed"] == 32);
}

TEST_CASE("kill -9 of a node mid-run: detected, stages move to the spare node, the run completes") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  node_process doomed, spare;
  REQUIRE(app::train_command({"tiny", dirs.sets("clean", {}), "", 0}) == 0);
  const auto killed = dirs.sets(
      "killed", {"pipeline.nodes=[local," + doomed.address() + ",local,local]",
                 "pipeline.spare_nodes=[" + spare.address() + "]", "faults.kill_node=[" + doomed.address() + "@0.3]",
                 "data.train_limit=8192", "training.epochs=1"});
  REQUIRE(app::train_command({"tiny", killed, "", 0}) == 0);
  const auto summary = dirs.summary("killed");
  CHECK(summary["micro_batches"]["restarts"].get<int64_t>() >= 1);
  CHECK(summary["micro_batches"]["completed"].get<int64_t>() == 8192 / 8);
  std::ifstream in(dirs.root / "killed" / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["event"] == "failure") {
      MESSAGE("failure: " << j["what"] << ", recovered in " << j["recovery_seconds"] << " s");
      CHECK(j["stage"] == 2);
      break;
    }
  }
}

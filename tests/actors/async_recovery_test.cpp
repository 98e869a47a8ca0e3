// Failures in async runs with snapshots: a crashed stage rolls back to the last snapshot (global
// recovery) or is rebuilt alone from its part of it (stage-local recovery, docs/design.md §6), and every
// micro-batch is completed once (those lost in flight in a stage-local recovery are re-issued).
#include <filesystem>

#include "app/commands.hpp"
#include "tests/actors/snapshot_runs.hpp"
#include "training/snapshot.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

TEST_CASE(
    "async: a crashed stage rolls back to the last snapshot, not the checkpoint, and every micro-batch runs "
    "once") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-snapshot-crash-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "async", "petra");
  // Stage 3 throws at its forward of micro-batch 50 (inside epoch 2). The cut before 40 is whole by
  // then: with 2J − 1 = 7 credits, 50 enters only after 43 finished at stage 1, and every part of
  // that cut went out before 40's backward passed its stage. The cut before 50 may be whole too:
  // stage 3 takes its part before it forwards 50, and when its window (3 awaiting backward) is full
  // it waits for a backward, so the rest of that cut can complete first.
  sets.push_back("faults.crash_at_tick=[-1,-1,50,-1]");
  sets.push_back("faults.recovery=global");
  sets.push_back("output.name=crashed");
  petra::train_options run{"tiny", sets, "", 0};
  REQUIRE(app::train_command(run) == 0);
  const auto failures = event_lines(dir / "crashed", "failure");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["recovery"] == "global (faults.recovery: global)");
  CHECK(failures[0]["restored_from"] == "snapshot");
  const int64_t replayed = failures[0]["replayed_micro_batches"].get<int64_t>();
  CHECK_MESSAGE((replayed == 64 - 40 || replayed == 64 - 50), replayed);  // from a cut, not from 32
  check_every_micro_batch_once(dir / "crashed");
  fs::remove_all(dir);
}

TEST_CASE(
    "async: a crashed stage is rebuilt alone from its snapshot, the others keep their state, the "
    "micro-batches lost in flight are re-issued and every one is completed") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-local-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const std::string method : {"petra", "delayed+inputs+weights"}) {
    CAPTURE(method);
    auto sets = base_sets(dir, "async", method);
    // Snapshots at epoch ends only: stage 3 throws at its forward of micro-batch 45, long after the
    // cut before 32 was whole (its markers passed every stage before 32 did) and before the next.
    sets.push_back("output.checkpoint_every_steps=0");
    sets.push_back("faults.crash_at_tick=[-1,-1,45,-1]");
    sets.push_back("output.name=" + method);
    petra::train_options run{"tiny", sets, "", 0};
    REQUIRE(app::train_command(run) == 0);
    const auto failures = event_lines(dir / method, "failure");
    REQUIRE(failures.size() == 1);
    CHECK(failures[0]["recovery"] == "local");
    CHECK(failures[0]["stages_rebuilt"] == nlohmann::json::array({3}));
    CHECK(failures[0]["restored_from"] == "snapshot");
    const int64_t reissued = failures[0]["reissued_micro_batches"].get<int64_t>();
    CHECK(reissued >= 1);
    CHECK(reissued <= 7);  // at most the 2J − 1 credits were in flight
    CHECK(failures[0]["lost_micro_batches"] == 0);
    const auto summary = event_lines(dir / method, "summary");
    REQUIRE(summary.size() == 1);
    const nlohmann::json& counted = summary[0]["micro_batches"];
    CHECK(counted["completed"] == 64);
    CHECK(counted["lost"] == 0);
    CHECK(counted["reissued"] == reissued);
    CHECK(counted["local_recoveries"] == 1);
    CHECK(counted["restarts"] == 0);
    CHECK(counted["replayed"] == 0);
    const auto epochs = event_lines(dir / method, "epoch");
    REQUIRE(epochs.size() == 2);
    // Stage 3 went back to its state before micro-batch 32 and lost the steps it took after it;
    // stages 2 and 4 kept theirs.
    const auto steps = [&](std::size_t j) { return epochs[1]["stages"][j]["weight_version"].get<int64_t>(); };
    CHECK(steps(2) < steps(1));
    CHECK(steps(2) < steps(3));
  }
  fs::remove_all(dir);
}

TEST_CASE("async: a snapshot in progress when a stage is lost is given up, the next one is taken") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-local-cut-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "async", "petra");  // snapshots before 10, 20, 30, 32, 40, 50, 60
  // Stage 3 takes its part of the cut before 50 and throws at the forward of 50 right behind it:
  // that cut cannot complete.
  sets.push_back("faults.crash_at_tick=[-1,-1,50,-1]");
  sets.push_back("output.name=cut");
  petra::train_options run{"tiny", sets, "", 0};
  REQUIRE(app::train_command(run) == 0);
  const auto failures = event_lines(dir / "cut", "failure");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["recovery"] == "local");
  CHECK(failures[0]["restored_from"] == "snapshot");
  const nlohmann::json counted = event_lines(dir / "cut", "summary").at(0)["micro_batches"];
  CHECK(counted["completed"] == 64);  // what was lost in flight was re-issued
  CHECK(counted["lost"] == 0);
  CHECK(counted["restarts"] == 0);
  // The snapshot after the recovery was taken, whole.
  CHECK(read_snapshot((dir / "cut").string(), 4).metadata.at("global_position") == "60");
  fs::remove_all(dir);
}

TEST_CASE(
    "async: a lost stage 1 is rebuilt alone, the loader's record gives back its count, what was in flight "
    "is re-issued and the run ends with every micro-batch completed once") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-local-first-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "async", "petra");
  sets.push_back("faults.crash_at_tick=[50,-1,-1,-1]");
  sets.push_back("output.name=first");
  petra::train_options run{"tiny", sets, "", 0};
  REQUIRE(app::train_command(run) == 0);
  const auto failures = event_lines(dir / "first", "failure");
  REQUIRE(failures.size() == 1);
  MESSAGE("failure: " << failures[0].dump());
  CHECK(failures[0]["recovery"] == "local");
  CHECK(failures[0]["stages_rebuilt"] == nlohmann::json::array({1}));
  const int64_t reissued = failures[0]["reissued_micro_batches"].get<int64_t>();
  CHECK(reissued >= 1);  // stage 1 throws at its forward of 50: what it had sent on is in flight
  CHECK(reissued <= 7);  // at most the 2J − 1 credits
  CHECK(failures[0]["lost_micro_batches"] == 0);
  // The same accounting as a run without faults: 64 completed, none lost, no rollback.
  const nlohmann::json counted = event_lines(dir / "first", "summary").at(0)["micro_batches"];
  CHECK(counted["completed"] == 64);
  CHECK(counted["lost"] == 0);
  CHECK(counted["reissued"] == reissued);
  CHECK(counted["restarts"] == 0);
  CHECK(counted["replayed"] == 0);
  CHECK(event_lines(dir / "first", "epoch").size() == 2);
  fs::remove_all(dir);
}

TEST_CASE(
    "async: a crashed stage on a simulated device it shares is rebuilt alone on that device, the run ends "
    "with every micro-batch completed once") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-local-sim-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "async", "petra");
  // Stage 2 shares sim:0 with stage 1; the rebuilt one gets a stream of the same sim:0, so stage 1
  // hands over to it (and it to stage 3 on sim:1) as before. Snapshots at epoch ends only.
  sets.push_back("pipeline.devices=[sim:0,sim:0,sim:1,cpu]");
  sets.push_back("output.checkpoint_every_steps=0");
  sets.push_back("faults.crash_at_tick=[-1,45,-1,-1]");
  sets.push_back("output.name=sim");
  petra::train_options run{"tiny", sets, "", 0};
  REQUIRE(app::train_command(run) == 0);
  const auto failures = event_lines(dir / "sim", "failure");
  REQUIRE(failures.size() == 1);
  MESSAGE("failure: " << failures[0].dump());
  CHECK(failures[0]["recovery"] == "local");
  CHECK(failures[0]["stages_rebuilt"] == nlohmann::json::array({2}));
  CHECK(failures[0]["restored_from"] == "snapshot");
  CHECK(failures[0]["reissued_micro_batches"].get<int64_t>() >= 1);
  const nlohmann::json counted = event_lines(dir / "sim", "summary").at(0)["micro_batches"];
  CHECK(counted["completed"] == 64);
  CHECK(counted["lost"] == 0);
  CHECK(counted["reissued"] == failures[0]["reissued_micro_batches"]);
  CHECK(counted["restarts"] == 0);
  CHECK(event_lines(dir / "sim", "epoch").size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("lockstep: a lost stage 1 is not rebuilt alone: the run rolls back, saying why") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-local-first-ls-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "lockstep", "petra");
  sets.push_back("faults.crash_at_tick=[50,-1,-1,-1]");
  sets.push_back("output.name=first");
  petra::train_options run{"tiny", sets, "", 0};
  REQUIRE(app::train_command(run) == 0);
  const auto failures = event_lines(dir / "first", "failure");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["recovery"].get<std::string>().find("stage 1 is lost") != std::string::npos);
  CHECK(failures[0]["completed_before_failure"].is_null());  // stage 1's count went with it
  check_every_micro_batch_once(dir / "first");
  // Those it had completed before the snapshot are counted from the snapshot.
  CHECK(event_lines(dir / "first", "summary").at(0)["micro_batches"]["completed"] == 64);
  fs::remove_all(dir);
}

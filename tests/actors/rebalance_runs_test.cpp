// Online rebalancing in the runtimes that honour it: a forced move between two drained phases gives
// lockstep and simulate the same weights bit for bit; a lockstep run that moves a block ends where a
// run resumed from the same point with the final cut ends; the runtimes and points it cannot honour
// are refused before anything is written.
#include "tests/actors/snapshot_runs.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

namespace fs = std::filesystem;

/// The tiny preset on 4 stages [1, 2, 1, 1], two epochs of 32 micro-batches, drained points every 10
/// micro-batches (5 steps of k = 2) and at the epoch end, rebalancing on.
std::vector<std::string> rebalance_sets(const fs::path& dir, const std::string& mode,
                                        const std::string& name) {
  return {"runtime.mode=" + mode,
          "training.epochs=2",
          "data.train_limit=256",
          "data.test_limit=64",
          "output.dir=" + dir.string(),
          "output.name=" + name,
          "output.checkpoint_every_steps=5",
          "pipeline.stage_blocks=[1,2,1,1]",
          "pipeline.rebalance=true"};
}

fs::path scratch(const std::string& what) {
  const fs::path dir =
      fs::temp_directory_path() / ("petra-rebalance-" + what + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

/// Trains `sets` plus `extra`; returns the exit code.
int train(std::vector<std::string> sets, const std::vector<std::string>& extra, int stop_after_epoch = 0) {
  sets.insert(sets.end(), extra.begin(), extra.end());
  petra::train_options o{"tiny", sets, "", stop_after_epoch};
  return app::train_command(o);
}

}  // namespace

TEST_CASE("rebalance: a forced move at the epoch end, lockstep = simulate bit for bit, logged") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = scratch("modes");
  for (const char* mode : {"simulate", "lockstep"})
    REQUIRE(train(rebalance_sets(dir, mode, mode), {"testing.rebalance_moves=[\"32:2>3\"]"}) == 0);
  CHECK(differing(final_weights(dir / "simulate"), final_weights(dir / "lockstep")) == 0);
  CHECK(epoch_lines(dir / "simulate") == epoch_lines(dir / "lockstep"));
  for (const char* mode : {"simulate", "lockstep"}) {
    CAPTURE(mode);
    const auto moves = event_lines(dir / mode, "rebalance");
    REQUIRE(moves.size() == 1);
    CHECK(moves[0]["position"] == 32);
    CHECK(moves[0]["block"] == 3);  // stage 2 held blocks 2 and 3 (block 1: the stem)
    CHECK(moves[0]["from"] == 2);
    CHECK(moves[0]["to"] == 3);
    CHECK(moves[0]["forced"] == true);
    CHECK(moves[0]["stage_blocks"] == nlohmann::json::array({1, 1, 2, 1}));
    CHECK(moves[0]["busy_seconds"].size() == 4);
    for (const auto& b : moves[0]["busy_seconds"]) CHECK(b.get<double>() > 0);  // measured in both
    const auto end = event_lines(dir / mode, "partition");
    REQUIRE(end.size() == 1);
    CHECK(end[0]["stage_blocks"] == nlohmann::json::array({1, 1, 2, 1}));
    CHECK(end[0]["initial_stage_blocks"] == nlohmann::json::array({1, 2, 1, 1}));
    CHECK(end[0]["moves"] == 1);
    // Every micro-batch once at every stage, across the move.
    const auto epochs = event_lines(dir / mode, "epoch");
    REQUIRE(epochs.size() == 2);
    for (const auto& s : epochs[1]["stages"]) CHECK(s["backwards"] == 32);
  }
  fs::remove_all(dir);
}

TEST_CASE("rebalance: lockstep with a forced move = the run resumed from the same point with the final cut") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = scratch("resume");
  REQUIRE(train(rebalance_sets(dir, "lockstep", "moved"), {"testing.rebalance_moves=[\"32:2>3\"]"}) == 0);
  // The same run with no move (a margin of 1 never moves; the points drain all the same), stopped at
  // the point, then resumed from its checkpoint with the blocks where the move put them.
  REQUIRE(train(rebalance_sets(dir, "lockstep", "resumed"), {"pipeline.rebalance_margin=1"}, 1) == 0);
  CHECK(event_lines(dir / "resumed", "rebalance").empty());
  petra::train_options resume{"", {"pipeline.stage_blocks=[1,1,2,1]"}, (dir / "resumed").string(), 0};
  REQUIRE(app::train_command(resume) == 0);
  CHECK(differing(final_weights(dir / "moved"), final_weights(dir / "resumed")) == 0);
  CHECK(epoch_lines(dir / "moved") == epoch_lines(dir / "resumed"));
  // Resumed without saying where the blocks are, a rebalanced run takes its checkpoint's cut.
  REQUIRE(train(rebalance_sets(dir, "lockstep", "stopped"), {"testing.rebalance_moves=[\"32:2>3\"]"}, 1) ==
          0);
  petra::train_options again{"", {}, (dir / "stopped").string(), 0};
  REQUIRE(app::train_command(again) == 0);
  CHECK(differing(final_weights(dir / "moved"), final_weights(dir / "stopped")) == 0);
  fs::remove_all(dir);
}

TEST_CASE("rebalance: what cannot be honoured is refused with exit code 2 before anything is written") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = scratch("refused");
  CHECK(train(rebalance_sets(dir, "async", "async"), {"faults.duplicate=[0,0.1,0,0]"}) == 2);
  CHECK_FALSE(fs::exists(dir / "async"));
  CHECK(train(rebalance_sets(dir, "lockstep", "off-point"), {"testing.rebalance_moves=[\"12:2>3\"]"}) == 2);
  CHECK_FALSE(fs::exists(dir / "off-point"));
  CHECK(train(rebalance_sets(dir, "simulate", "empty"), {"testing.rebalance_moves=[\"10:1>2\"]"}) == 2);
  CHECK_FALSE(fs::exists(dir / "empty"));
  CHECK(train(rebalance_sets(dir, "simulate", "fg"), {"training.method=forward_gradient"}) == 2);
  CHECK_FALSE(fs::exists(dir / "fg"));
  fs::remove_all(dir);
}

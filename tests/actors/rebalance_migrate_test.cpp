// Online rebalancing of stages placed elsewhere: a block move rebuilds every stage where it is placed
// now (a migrated stage on its new device, a stage of a `petra node` on the node), so a lockstep run
// with migrations, or with stages on a node, ends bit-identical to the same run with the same block
// moves all in this process; in async both kinds of move keep every micro-batch and the state.
#include "tests/actors/migration_runs.hpp"
#include "tests/actors/node_process.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

namespace fs = std::filesystem;

/// The tiny preset on 4 stages [1, 2, 1, 1] in lockstep, two epochs of 32 micro-batches, drained
/// points every 10 micro-batches and at the epoch end, two forced block moves.
std::vector<std::string> both_sets(const fs::path& dir, const std::string& name) {
  return {"runtime.mode=lockstep",
          "training.epochs=2",
          "data.train_limit=256",
          "data.test_limit=64",
          "output.dir=" + dir.string(),
          "output.name=" + name,
          "output.checkpoint_every_steps=5",
          "pipeline.stage_blocks=[1,2,1,1]",
          "pipeline.rebalance=true",
          "testing.rebalance_moves=[\"20:2>3\",\"40:3>2\"]"};
}

/// The run's block moves: where, and the cut after each.
void check_moves(const fs::path& run) {
  const auto moves = event_lines(run, "rebalance");
  REQUIRE(moves.size() == 2);
  CHECK(moves[0]["position"] == 20);
  CHECK(moves[0]["stage_blocks"] == nlohmann::json::array({1, 1, 2, 1}));
  CHECK(moves[1]["position"] == 40);
  CHECK(moves[1]["stage_blocks"] == nlohmann::json::array({1, 2, 1, 1}));
  for (const auto& m : moves) CHECK(m["restored_checksum"] == m["checksum"]);
}

}  // namespace

TEST_CASE("rebalance + migrate: lockstep with both = the same block moves without migrations, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("rebalance-both");
  REQUIRE(train_migrating(both_sets(dir, "moves"), {}) == 0);
  // Stage 2 leaves for sim:0 before the first block move, which rebuilds it there; stage 3 moves
  // right after that block move (the same point); both come back to this CPU later.
  REQUIRE(
      train_migrating(both_sets(dir, "both"), {"pipeline.migrate=[\"10:2>sim:0\",\"20:3>sim:1\",\"40:2>cpu\","
                                               "\"50:3>cpu\",\"50:4>sim:0\"]"}) == 0);
  CHECK(differing(final_weights(dir / "moves"), final_weights(dir / "both")) == 0);
  CHECK(epoch_lines(dir / "moves") == epoch_lines(dir / "both"));
  check_moves(dir / "moves");
  check_moves(dir / "both");
  const auto lines = event_lines(dir / "both", "migrate");
  check_scheduled_moves(lines, {{10, 2, "cpu", "sim:0"},
                                {20, 3, "cpu", "sim:1"},
                                {40, 2, "sim:0", "cpu"},  // still there after the block move at 20
                                {50, 3, "sim:1", "cpu"},  // and after the one at 40
                                {50, 4, "cpu", "sim:0"}});
  check_state_carried(lines);
  for (const auto& e : event_lines(dir / "both", "epoch"))  // the move at 40 restarts epoch 2's records
    CHECK(e["stages"].size() == 4);
  fs::remove_all(dir);
}

TEST_CASE("rebalance + migrate: async moves a block and a stage at the same drained epoch end") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("rebalance-both-async");
  REQUIRE(train_migrating(migration_sets(dir, "both", "async"),
                          {"pipeline.rebalance=true", "testing.rebalance_moves=[\"32:2>3\"]",
                           "pipeline.migrate=[\"32:3>sim:0\",\"64:3>cpu\"]"}) == 0);
  check_every_backward_once(dir / "both");
  const auto moves = event_lines(dir / "both", "rebalance");
  REQUIRE(moves.size() == 1);
  CHECK(moves[0]["restored_checksum"] == moves[0]["checksum"]);
  CHECK(moves[0]["stage_blocks"] == nlohmann::json::array({1, 1, 2, 1}));
  const auto lines = event_lines(dir / "both", "migrate");
  check_scheduled_moves(lines, {{32, 3, "cpu", "sim:0"}, {64, 3, "sim:0", "cpu"}});
  check_state_carried(lines);
  CHECK(lines[0]["bytes"] == lines[1]["bytes"]);  // stage 3 holds the moved block both times
  fs::remove_all(dir);
}

TEST_CASE("rebalance: stages on a `petra node` are rebuilt on it, lockstep bit-identical to all local") {
  PETRA_REQUIRE_FASHION_MNIST();
  node_process node;
  const fs::path dir = migration_scratch("rebalance-node");
  REQUIRE(train_migrating(both_sets(dir, "local"), {}) == 0);
  // Stages 2 and 3 (the two that give and take blocks) on the node; after the moves stage 3 comes
  // back here from where the second move rebuilt it.
  const std::string at = node.address();
  REQUIRE(train_migrating(both_sets(dir, "node"), {"pipeline.nodes=[local," + at + "," + at + ",local]",
                                                   "pipeline.migrate=[\"50:3>cpu\"]"}) == 0);
  CHECK(differing(final_weights(dir / "local"), final_weights(dir / "node")) == 0);
  CHECK(epoch_lines(dir / "local") == epoch_lines(dir / "node"));
  check_moves(dir / "node");
  const auto lines = event_lines(dir / "node", "migrate");
  check_scheduled_moves(lines, {{50, 3, "cpu@" + at, "cpu"}});
  check_state_carried(lines);
  fs::remove_all(dir);
}

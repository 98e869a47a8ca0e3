// Live migration with forward gradients: a stage moves with its auxiliary head, so a lockstep run
// whose stages move to simulated devices and back ends bit-identical to the run left in place,
// auxiliary heads included; an async run keeps every micro-batch and the heads' bytes.
#include "tests/actors/migration_runs.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

namespace fs = std::filesystem;

/// Forward gradients with a local guess of a global target: every stage before the last has an
/// auxiliary head, and its guesses wait for the loss' derivatives (none is held at a drained point).
const std::vector<std::string> fg_sets = {
    "training.method=forward_gradient", "training.forward_gradient.guess=local",
    "training.forward_gradient.target=global", "training.forward_gradient.aux_width=8"};

}  // namespace

TEST_CASE("migrate: lockstep forward_gradient stages move with their auxiliary heads, bit-identical") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("fg");
  REQUIRE(train_migrating(migration_sets(dir, "still"), fg_sets) == 0);
  std::vector<std::string> moved = fg_sets;
  moved.push_back("pipeline.migrate=[\"32:2>sim:0\",\"32:4>sim:1\",\"64:1>sim:1\",\"64:2>cpu\"]");
  REQUIRE(train_migrating(migration_sets(dir, "moved"), moved) == 0);
  const trained still = final_weights(dir / "still");
  int heads = 0, momentum = 0;  // what a head left behind would differ in: its weights and momentum
  for (const auto& [name, value] : still.weights) {
    heads += name.find("aux/param/") != std::string::npos;
    momentum += name.find("aux/momentum/") != std::string::npos;
  }
  CHECK(heads > 0);
  CHECK(momentum > 0);
  CHECK(differing(still, final_weights(dir / "moved")) == 0);
  CHECK(epoch_lines(dir / "still") == epoch_lines(dir / "moved"));
  check_every_backward_once(dir / "moved");
  const auto lines = event_lines(dir / "moved", "migrate");
  REQUIRE(lines.size() == 4);
  check_state_carried(lines);
  // Stage 2 carries its head both ways: the same bytes from the CPU and back from sim:0.
  CHECK(lines[0]["stage"] == 2);
  CHECK(lines[3]["stage"] == 2);
  CHECK(lines[0]["bytes"] == lines[3]["bytes"]);
  fs::remove_all(dir);
}

TEST_CASE("migrate: forward_gradient moves only where the auxiliary heads have just stepped") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("fg-refused");
  std::vector<std::string> odd = fg_sets;
  odd.push_back("pipeline.migrate=[\"33:2>sim:0\"]");  // training.accumulation is 2
  CHECK(train_migrating(migration_sets(dir, "odd"), odd) == 2);
  CHECK_FALSE(fs::exists(dir / "odd"));
  fs::remove_all(dir);
}

TEST_CASE("migrate: async forward_gradient stages move with their heads, every micro-batch once") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("fg-async");
  std::vector<std::string> moved = fg_sets;
  moved.push_back("pipeline.migrate=[\"32:2>sim:0\",\"64:3>sim:1\",\"64:2>cpu\"]");
  REQUIRE(train_migrating(migration_sets(dir, "moved", "async"), moved) == 0);
  check_every_backward_once(dir / "moved");
  const auto lines = event_lines(dir / "moved", "migrate");
  REQUIRE(lines.size() == 3);
  check_state_carried(lines);
  CHECK(lines[0]["bytes"] == lines[2]["bytes"]);  // stage 2 with its head, both ways
  fs::remove_all(dir);
}

TEST_CASE("migrate: a stage moved inside an epoch goes on counting that epoch's messages upstream") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("fg-counts");
  REQUIRE(train_migrating(migration_sets(dir, "still"), fg_sets) == 0);
  std::vector<std::string> moved = fg_sets;
  moved.push_back("pipeline.migrate=[\"48:3>sim:0\"]");  // inside epoch 2 (32 micro-batches each)
  REQUIRE(train_migrating(migration_sets(dir, "moved"), moved) == 0);
  const auto still = event_lines(dir / "still", "epoch");
  const auto after = event_lines(dir / "moved", "epoch");
  REQUIRE(still.size() == after.size());
  REQUIRE(still.size() >= 2);
  // The new actor goes on from the old one's counters (before: it counted from the move, 16 of 32).
  const int64_t expected = still[1]["stages"][2].value("upstream_messages", int64_t{-1});
  CHECK(expected > 0);
  CHECK(after[1]["stages"][2].value("upstream_messages", int64_t{-2}) == expected);
  CHECK(after[1]["stages"][2].value("upstream_bytes", int64_t{-2}) ==
        still[1]["stages"][2].value("upstream_bytes", int64_t{-1}));
  fs::remove_all(dir);
}

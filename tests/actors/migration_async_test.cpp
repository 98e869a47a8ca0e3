// Live migration in async at drained points (epoch ends that drain, pipeline.migrate points): async
// is not deterministic, so what is checked is the accounting (every micro-batch once at every
// stage, across the moves), the migrate lines, the state the new actor holds right after the move
// (byte for byte the old one's, by checksum) and that training goes on (its loss falls).
#include "tests/actors/migration_runs.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

namespace fs = std::filesystem;

/// The mean training loss falls from the first epoch to the last.
void check_loss_falls(const fs::path& run) {
  const auto epochs = event_lines(run, "epoch");
  REQUIRE(epochs.size() == 3);
  CHECK(epochs[2]["train_loss"].get<double>() < epochs[0]["train_loss"].get<double>());
}

}  // namespace

TEST_CASE("migrate: async stages moved at drained epoch ends keep every micro-batch and their state") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("async");
  REQUIRE(train_migrating(migration_sets(dir, "moved", "async"),
                          {"pipeline.migrate=[\"32:1>sim:0\",\"32:4>sim:1\",\"64:2>sim:1\",\"64:1>cpu\"]"}) ==
          0);
  check_every_backward_once(dir / "moved");
  for (const auto& e : event_lines(dir / "moved", "epoch"))  // drained at its end: its own forwards only
    for (const auto& s : e["stages"]) CHECK(s["forwards"] == 32);
  check_loss_falls(dir / "moved");
  const auto lines = event_lines(dir / "moved", "migrate");
  REQUIRE(lines.size() == 4);
  check_state_carried(lines);
  check_scheduled_moves(
      lines,
      {{32, 1, "cpu", "sim:0"}, {32, 4, "cpu", "sim:1"}, {64, 2, "cpu", "sim:1"}, {64, 1, "sim:0", "cpu"}});
  CHECK(lines[0]["bytes"] == lines[3]["bytes"]);  // stage 1's state, the same size both ways
  fs::remove_all(dir);
}

TEST_CASE(
    "migrate: an async run that evaluates by waves drains at a pipeline.migrate point and moves there") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("async-waves");
  std::vector<std::string> sets = migration_sets(dir, "moved", "async");
  for (std::string& s : sets)  // epochs end inside the stream (evaluation waves): no drain there
    if (s == "training.drain_at_epoch_end=true") s = "training.drain_at_epoch_end=false";
  REQUIRE(train_migrating(sets, {"pipeline.migrate=[\"48:3>sim:0\"]"}) == 0);
  check_every_backward_once(dir / "moved");
  check_loss_falls(dir / "moved");
  const auto lines = event_lines(dir / "moved", "migrate");
  REQUIRE(lines.size() == 1);
  check_state_carried(lines);
  CHECK(lines[0]["position"] == 48);
  CHECK(lines[0]["stage"] == 3);
  fs::remove_all(dir);
}

// Live migration in lockstep: stages moved at drained points (to simulated devices, to a `petra
// node` and back) end bit-identical to the same run left in place, every micro-batch once at every
// stage; to other compute threads, equal to round-off (the thread count orders the CPU kernels'
// sums); what cannot be honoured is refused before anything is written.
#include "tests/actors/migration_runs.hpp"

#include <cmath>

#include "tests/actors/node_process.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

namespace fs = std::filesystem;

/// Weights, momentum and BN running statistics are all in the checkpoint the runs are compared on.
void check_whole_state(const trained& t) {
  bool momentum = false, buffer = false;
  for (const auto& [name, value] : t.weights) {
    momentum = momentum || name.find("momentum/") != std::string::npos;
    buffer = buffer || name.find("buffer/") != std::string::npos;
  }
  CHECK(momentum);
  CHECK(buffer);
}

}  // namespace

TEST_CASE("migrate: lockstep stages moved to sim devices and back end bit-identical, logged") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("local");
  REQUIRE(train_migrating(migration_sets(dir, "still"), {}) == 0);
  REQUIRE(
      train_migrating(
          migration_sets(dir, "moved"),
          {"pipeline.migrate=[\"32:1>sim:0\",\"32:2>sim:0\",\"32:4>sim:1\",\"64:2>cpu\",\"64:3>sim:1\"]"}) ==
      0);
  const trained still = final_weights(dir / "still"), moved = final_weights(dir / "moved");
  check_whole_state(still);
  CHECK(differing(still, moved) == 0);
  CHECK(epoch_lines(dir / "still") == epoch_lines(dir / "moved"));
  check_every_backward_once(dir / "moved");
  const auto lines = event_lines(dir / "moved", "migrate");
  check_scheduled_moves(lines, {{32, 1, "cpu", "sim:0"},
                                {32, 2, "cpu", "sim:0"},
                                {32, 4, "cpu", "sim:1"},
                                {64, 2, "sim:0", "cpu"},
                                {64, 3, "cpu", "sim:1"}});
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CAPTURE(i);
    CHECK(lines[i]["bytes"].get<int64_t>() > 0);
    CHECK(lines[i]["seconds"].get<double>() >= 0);
    CHECK(lines[i]["tick"].get<int64_t>() > 0);
  }
  check_state_carried(lines);
  CHECK(lines[0]["tick"] == lines[2]["tick"]);  // one drained point, one tick count
  CHECK(lines[3]["tick"].get<int64_t>() > lines[0]["tick"].get<int64_t>());
  // A stage's state is the same size wherever it runs.
  CHECK(lines[1]["bytes"] == lines[3]["bytes"]);
  fs::remove_all(dir);
}

TEST_CASE("migrate: stages moved mid-epoch carry their record, the device does not change a bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("mid");
  // Both runs drain at micro-batch 48 and move stages 1 and 3 there: to the CPU again, or elsewhere.
  REQUIRE(train_migrating(migration_sets(dir, "cpu"), {"pipeline.migrate=[\"48:1>cpu\",\"48:3>cpu\"]"}) == 0);
  REQUIRE(train_migrating(migration_sets(dir, "elsewhere"),
                          {"pipeline.migrate=[\"48:1>sim:1\",\"48:3>sim:0\"]"}) == 0);
  CHECK(differing(final_weights(dir / "cpu"), final_weights(dir / "elsewhere")) == 0);
  CHECK(epoch_lines(dir / "cpu") == epoch_lines(dir / "elsewhere"));
  // The moved stages' epoch 2 record holds the micro-batches before the move too.
  check_every_backward_once(dir / "elsewhere");
  const auto epochs = event_lines(dir / "elsewhere", "epoch");
  CHECK(epochs[1]["stages"][2]["forwards"] == epochs[1]["stages"][1]["forwards"]);
  CHECK(event_lines(dir / "elsewhere", "migrate").size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("migrate: a stage keeping its inputs (adaptive fallback) moves with its mode and window") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("fallback");
  const std::vector<std::string> fallback = {"training.max_inversion_error=0.002",
                                             "runtime.inversion_sample_every=1"};
  REQUIRE(train_migrating(migration_sets(dir, "still"), fallback) == 0);
  std::vector<std::string> moved = fallback;
  moved.push_back("pipeline.migrate=[\"32:2>sim:0\",\"64:2>cpu\"]");
  REQUIRE(train_migrating(migration_sets(dir, "moved"), moved) == 0);
  const auto epochs = event_lines(dir / "still", "epoch");
  REQUIRE(epochs.size() == 3);
  CHECK(epochs[0]["stages"][1]["fallback_forwards"].get<int64_t>() > 0);  // stage 2 did fall back
  CHECK(differing(final_weights(dir / "still"), final_weights(dir / "moved")) == 0);
  CHECK(epoch_lines(dir / "still") == epoch_lines(dir / "moved"));
  const auto again = event_lines(dir / "moved", "epoch");
  REQUIRE(again.size() == 3);
  for (std::size_t e = 0; e < 3; ++e) {
    CAPTURE(e);
    CHECK(again[e]["stages"][1]["fallback_forwards"] == epochs[e]["stages"][1]["fallback_forwards"]);
    CHECK(again[e]["stages"][1]["fallback_switches"] == epochs[e]["stages"][1]["fallback_switches"]);
  }
  fs::remove_all(dir);
}

TEST_CASE("migrate: a stage moved to other compute threads ends equal to round-off") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("threads");
  REQUIRE(train_migrating(migration_sets(dir, "still"), {}) == 0);
  REQUIRE(train_migrating(migration_sets(dir, "threads"), {"pipeline.migrate=[\"64:3>cpu/2\"]"}) == 0);
  const auto lines = event_lines(dir / "threads", "migrate");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["from"] == "cpu");
  CHECK(lines[0]["to"] == "cpu/2");
  check_every_backward_once(dir / "threads");
  // Every weight where the run left in place has it, to the round-off of another summation order
  // in its last epoch (a state lost or taken from the wrong stage would be off by far more).
  const trained still = final_weights(dir / "still"), moved = final_weights(dir / "threads");
  REQUIRE(still.weights.size() == moved.weights.size());
  for (std::size_t i = 0; i < still.weights.size(); ++i) {
    if (still.weights[i].first.rfind("param/", 0) != 0) continue;
    CAPTURE(still.weights[i].first);
    const tensor &a = still.weights[i].second, &b = moved.weights[i].second;
    REQUIRE(a.numel() == b.numel());
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < a.numel(); ++k) {
      diff += (double(a.data()[k]) - b.data()[k]) * (double(a.data()[k]) - b.data()[k]);
      norm += double(a.data()[k]) * a.data()[k];
    }
    CHECK(std::sqrt(diff) <= 1e-5 * std::sqrt(norm) + 1e-12);
  }
  fs::remove_all(dir);
}

TEST_CASE("migrate: a lockstep stage moved to a `petra node` and back ends bit-identical") {
  PETRA_REQUIRE_FASHION_MNIST();
  node_process node;
  const fs::path dir = migration_scratch("node");
  REQUIRE(train_migrating(migration_sets(dir, "still"), {}) == 0);
  REQUIRE(train_migrating(migration_sets(dir, "moved"),
                          {"pipeline.migrate=[\"32:3>cpu@" + node.address() +
                           "\",\"64:3>cpu\",\"64:4>sim:0@" + node.address() + "\"]"}) == 0);
  CHECK(differing(final_weights(dir / "still"), final_weights(dir / "moved")) == 0);
  CHECK(epoch_lines(dir / "still") == epoch_lines(dir / "moved"));
  check_every_backward_once(dir / "moved");
  const auto lines = event_lines(dir / "moved", "migrate");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["to"] == "cpu@" + node.address());
  CHECK(lines[1]["from"] == "cpu@" + node.address());
  CHECK(lines[1]["to"] == "cpu");
  CHECK(lines[2]["to"] == "sim:0@" + node.address());
  fs::remove_all(dir);
}

TEST_CASE("migrate: what cannot be honoured is refused with exit code 2 before anything is written") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("refused");
  const std::string at32 = "pipeline.migrate=[\"32:2>sim:0\"]";
  auto refused = [&](const std::string& name, std::vector<std::string> extra) {
    CAPTURE(name);
    CHECK(train_migrating(migration_sets(dir, name), extra) == 2);
    CHECK_FALSE(fs::exists(dir / name));
  };
  refused("async-faults", {at32, "runtime.mode=async", "faults.duplicate=[0,0.1,0,0]"});
  refused("simulate", {at32, "runtime.mode=simulate"});
  refused("stage", {"pipeline.migrate=[\"32:5>sim:0\"]"});
  refused("end", {"pipeline.migrate=[\"96:2>sim:0\"]"});
  refused("syntax", {"pipeline.migrate=[\"32:2=>sim:0\"]"});
  refused("node", {"pipeline.migrate=[\"32:2>cpu@elsewhere\"]"});
  fs::remove_all(dir);
}

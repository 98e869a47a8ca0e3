// Online rebalancing in async, at the points where the run drains: async is not deterministic, so
// what is checked is the move itself (the model's forward and state right after it are those right
// before), the epoch accounting across it (every micro-batch once at every stage), its event line,
// and that training goes on (the loss falls).
#include <map>

#include "tests/actors/migration_runs.hpp"
#include "tests/training/stage_tensors.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

namespace fs = std::filesystem;

/// The tiny preset (stem | g1.b0 g1.b1 g2.b0 | head: one heavy stage) in async, three epochs of 32
/// micro-batches that drain at their ends, rebalancing on.
std::vector<std::string> async_sets(const fs::path& dir, const std::string& name, int epochs = 3) {
  return {"runtime.mode=async",
          "training.epochs=" + std::to_string(epochs),
          "data.train_limit=256",
          "data.test_limit=64",
          "output.dir=" + dir.string(),
          "output.name=" + name,
          "training.drain_at_epoch_end=true",
          "pipeline.stage_blocks=[1,3,1]",
          "pipeline.rebalance=true"};
}

/// Every stage ran each micro-batch of every epoch forward and backward once (drained at the epoch
/// ends: an epoch's record holds its own forwards only), across the moves; the loss fell.
void check_epochs(const fs::path& run, std::size_t epochs) {
  const auto lines = event_lines(run, "epoch");
  REQUIRE(lines.size() == epochs);
  for (const auto& e : lines) {
    REQUIRE(e["stages"].size() == 3);
    for (const auto& s : e["stages"]) {
      CHECK(s["forwards"] == 32);
      CHECK(s["backwards"] == 32);
    }
  }
  CHECK(lines.back()["train_loss"].get<double>() < lines.front()["train_loss"].get<double>());
}

/// The model's state right after each move is the one right before (same bytes, new places).
void check_state_kept(const std::vector<nlohmann::json>& moves) {
  for (const auto& m : moves) {
    CAPTURE(m.dump());
    REQUIRE(m["checksum"].is_string());
    CHECK(m["checksum"].get<std::string>().size() == 16);
    CHECK(m["restored_checksum"] == m["checksum"]);
    CHECK(m["move_seconds"].get<double>() >= 0);
  }
}

int train(std::vector<std::string> sets, const std::vector<std::string>& extra) {
  sets.insert(sets.end(), extra.begin(), extra.end());
  petra::train_options o{"tiny", sets, "", 0};
  return app::train_command(o);
}

}  // namespace

TEST_CASE("rebalance: async stages recut after a phase give the same forward, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("async", "petra", 128);
  c.pipeline.stage_blocks = {1, 3, 1};
  c.pipeline.rebalance = true;
  training_data data = load_training_data(c);
  const optimizer_settings opt =
      optimizer_for(c.training, data.train_feed->micro_batches_per_epoch() / c.training.accumulation);
  std::unique_ptr<pipeline_runtime> r = make_actor_runtime(c, data, opt);
  r->train(phase_request::of(1, 0, 8), {});  // weights, momentum and BN statistics moved on
  const eval_result before = r->evaluate(*data.test_feed);
  const auto state = tensors_by_name(*r);
  for (const std::vector<int>& cut : {std::vector<int>{1, 2, 2}, std::vector<int>{2, 1, 2}}) {
    CAPTURE(cut[0]);
    r->repartition(cut);
    REQUIRE(r->snapshot().size() == 3);
    const eval_result after = r->evaluate(*data.test_feed);
    CHECK(after.loss == before.loss);  // the same logits: the same mean loss to the last bit
    CHECK(after.accuracy == before.accuracy);
    CHECK(differing_tensors(state, tensors_by_name(*r)) ==
          0);  // weights, momentum, BN statistics moved along
  }
  // And training goes on on the new cut: every micro-batch of the phase comes back.
  const phase_result next = r->train(phase_request::of(1, 8, 8), {});
  CHECK(next.completed == 8);
}

TEST_CASE("rebalance: async with forced moves at drained epoch ends keeps every micro-batch and the model") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("rebalance-async");
  REQUIRE(train(async_sets(dir, "moved"), {"testing.rebalance_moves=[\"32:2>3\",\"64:2>1\"]"}) == 0);
  check_epochs(dir / "moved", 3);
  const auto moves = event_lines(dir / "moved", "rebalance");
  REQUIRE(moves.size() == 2);
  check_state_kept(moves);
  CHECK(moves[0]["position"] == 32);
  CHECK(moves[0]["block"] == 4);  // stage 2's last block (g2.b0) goes right
  CHECK(moves[0]["stage_blocks"] == nlohmann::json::array({1, 2, 2}));
  CHECK(moves[1]["position"] == 64);
  CHECK(moves[1]["block"] == 2);  // stage 2's first block (g1.b0) goes left
  CHECK(moves[1]["stage_blocks"] == nlohmann::json::array({2, 1, 2}));
  for (const auto& m : moves) {
    CHECK(m["forced"] == true);
    CHECK(m["tick"] == 0);  // async counts no ticks
    REQUIRE(m["busy_seconds"].size() == 3);
    for (const auto& b : m["busy_seconds"]) CHECK(b.get<double>() > 0);  // measured by the async stages
  }
  const auto end = event_lines(dir / "moved", "partition");
  REQUIRE(end.size() == 1);
  CHECK(end[0]["stage_blocks"] == nlohmann::json::array({2, 1, 2}));
  CHECK(end[0]["moves"] == 2);
  fs::remove_all(dir);
}

TEST_CASE("rebalance: async moves a block off a stage its measured busy time shows is the busiest") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("rebalance-async-rule");
  // Stage 2 holds three blocks and works 4× as long on each: whatever the machine's load, it is the
  // busiest by far at the one point of the run, and a block leaves it.
  REQUIRE(train(async_sets(dir, "rule", 2), {"faults.slow=[1,4,1]"}) == 0);
  check_epochs(dir / "rule", 2);
  const auto moves = event_lines(dir / "rule", "rebalance");
  REQUIRE(moves.size() == 1);
  check_state_kept(moves);
  const auto& m = moves[0];
  CHECK(m["position"] == 32);
  CHECK(m["forced"] == false);
  CHECK(m["from"] == 2);
  const std::vector<double> busy = m["busy_seconds"].get<std::vector<double>>();
  REQUIRE(busy.size() == 3);
  CHECK(busy[1] > busy[0]);
  CHECK(busy[1] > busy[2]);
  REQUIRE(m["predicted_busy_seconds"].size() == 3);
  const auto after = m["stage_blocks"].get<std::vector<int>>();
  CHECK((after == std::vector<int>{2, 2, 1} || after == std::vector<int>{1, 2, 2}));
  fs::remove_all(dir);
}

TEST_CASE("rebalance: async with faults that hide a drain is refused with exit code 2, nothing written") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("rebalance-async-refused");
  for (const char* fault : {"faults.duplicate=[0.1,0,0]", "faults.forward_delay=[2,0,0]"}) {
    CAPTURE(fault);
    CHECK(train(async_sets(dir, "faulty"), {fault}) == 2);
    CHECK_FALSE(fs::exists(dir / "faulty"));
  }
  fs::remove_all(dir);
}

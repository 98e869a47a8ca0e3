// Online rebalancing inside an epoch: a block move at a drained point builds the stages (and, in the
// actor runtimes, the loss actor and the loader) anew, and the epoch's record goes on across it —
// its line counts every micro-batch at every stage, its loss and accuracy are the whole epoch's,
// and its images/s are over the whole epoch — in simulate, lockstep and async.
#include <cmath>
#include <map>

#include "tests/actors/migration_runs.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

namespace fs = std::filesystem;

/// Epoch 1 of the tiny preset on 4 stages [1, 2, 1, 1] in `mode`: 12 micro-batches, a block move
/// (stage 2's last block to stage 3), the epoch's other 20. Returns both phases and the epoch.
struct split_epoch {
  phase_result before, after;
  std::vector<epoch_result> epochs;
};

split_epoch train_split(const std::string& mode) {
  config::run_config c = tiny_config(mode, "petra", 256);
  c.pipeline.rebalance = true;
  training_data data = load_training_data(c);
  const int64_t per_epoch = data.train_feed->micro_batches_per_epoch();
  const optimizer_settings opt = optimizer_for(c.training, per_epoch / c.training.accumulation);
  std::unique_ptr<pipeline_runtime> r = make_runtime(c, data, opt);
  split_epoch out;
  const epoch_fn on_epoch = [&](const epoch_result& e) { out.epochs.push_back(e); };
  out.before = r->train(phase_request::of(1, 0, 12), {}, on_epoch);
  REQUIRE(out.epochs.empty());
  r->repartition({1, 1, 2, 1});
  out.after = r->train(phase_request::of(1, 12, per_epoch - 12), {}, on_epoch);
  return out;
}

/// The tiny preset on 4 stages [1, 2, 1, 1] in `mode`, two epochs of 32 micro-batches, drained points
/// every 10 micro-batches and at the epoch ends, a step line every optimizer step, rebalancing on.
std::vector<std::string> inside_sets(const fs::path& dir, const std::string& mode) {
  return {"runtime.mode=" + mode,
          "training.epochs=2",
          "data.train_limit=256",
          "data.test_limit=64",
          "output.dir=" + dir.string(),
          "output.name=" + mode,
          "output.checkpoint_every_steps=5",
          "output.metrics_every_steps=1",
          "pipeline.stage_blocks=[1,2,1,1]",
          "pipeline.rebalance=true"};
}

/// Each epoch line of `run` counts its 32 micro-batches at every stage, forward and backward (every
/// epoch ends drained), and its images/s all of its 256 images.
void check_whole_epochs(const fs::path& run, std::size_t stages) {
  const auto epochs = event_lines(run, "epoch");
  REQUIRE(epochs.size() == 2);
  for (const auto& e : epochs) {
    CAPTURE(e["epoch"]);
    REQUIRE(e["stages"].size() == stages);
    for (const auto& s : e["stages"]) {
      CHECK(s["forwards"] == 32);
      CHECK(s["backwards"] == 32);
    }
    const double images = e["images_per_s"].get<double>() * e["epoch_seconds"].get<double>();
    CHECK(std::llround(images) == 256);
  }
}

}  // namespace

TEST_CASE("rebalance: a move inside an epoch keeps the epoch's record whole in every runtime") {
  PETRA_REQUIRE_FASHION_MNIST();
  std::map<std::string, run_totals> whole;
  for (const std::string mode : {"simulate", "lockstep", "async"}) {
    CAPTURE(mode);
    const split_epoch run = train_split(mode);
    REQUIRE(run.epochs.size() == 1);
    const epoch_result& e = run.epochs.front();
    // Every micro-batch of the epoch scored once, before and after the move alike.
    CHECK(run.before.micro_batches == 12);
    CHECK(run.after.micro_batches == 20);
    CHECK(e.train.micro_batches == 32);
    CHECK(e.train.samples == 256);
    CHECK(e.train.correct == run.before.correct + run.after.correct);
    // Its loss: the two partial records' means weighted by their samples.
    const double weighted = (run.before.mean_loss() * static_cast<double>(run.before.samples) +
                             run.after.mean_loss() * static_cast<double>(run.after.samples)) /
                            static_cast<double>(run.before.samples + run.after.samples);
    CHECK(e.train.mean_loss() == doctest::Approx(weighted).epsilon(1e-12));
    // Each stage's record: every micro-batch forward and backward once, across the move.
    REQUIRE(e.stages.size() == 4);
    for (const stage_report& s : e.stages) {
      CAPTURE(s.stage);
      CHECK(s.stats.forwards == 32);
      CHECK(s.stats.backwards == 32);
    }
    whole[mode] = e.train;
  }
  // Lockstep = simulate, to the last bit, for the epoch's loss, accuracy and samples.
  CHECK(whole["lockstep"].loss_sum == whole["simulate"].loss_sum);
  CHECK(whole["lockstep"].correct == whole["simulate"].correct);
  CHECK(whole["lockstep"].samples == whole["simulate"].samples);
}

TEST_CASE("rebalance: moves inside epochs, lockstep = simulate epoch lines, each over its whole epoch") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("rebalance-inside");
  // Points every 10 micro-batches of the run (and at 32, 64): a move 20 micro-batches into epoch 1,
  // another 28 into epoch 2.
  for (const char* mode : {"simulate", "lockstep"})
    REQUIRE(train_migrating(inside_sets(dir, mode), {"testing.rebalance_moves=[\"20:2>3\",\"60:3>2\"]"}) ==
            0);
  CHECK(epoch_lines(dir / "simulate") == epoch_lines(dir / "lockstep"));
  for (const std::string mode : {"simulate", "lockstep"}) {
    CAPTURE(mode);
    const fs::path run = dir / mode;
    check_whole_epochs(run, 4);
    const auto moves = event_lines(run, "rebalance");
    REQUIRE(moves.size() == 2);
    CHECK(moves[0]["position"] == 20);
    CHECK(moves[1]["position"] == 60);
    CHECK(event_lines(run, "partition").at(0)["stage_blocks"] == nlohmann::json::array({1, 2, 1, 1}));
  }
  // And both runtimes' stages count the same.
  const auto a = event_lines(dir / "simulate", "epoch"), b = event_lines(dir / "lockstep", "epoch");
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK(a[i]["stages"][j]["delay_ticks"] == b[i]["stages"][j]["delay_ticks"]);
      CHECK(a[i]["stages"][j]["staleness_steps"] == b[i]["stages"][j]["staleness_steps"]);
    }
  fs::remove_all(dir);
}

TEST_CASE("rebalance: async moves inside epochs, each epoch line counts every micro-batch at every stage") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = migration_scratch("rebalance-async-inside");
  // Drained epoch ends, points every 10 micro-batches of each epoch: a move 20 micro-batches into
  // epoch 1, another 20 into epoch 2.
  std::vector<std::string> sets = inside_sets(dir, "async");
  sets.push_back("training.drain_at_epoch_end=true");
  REQUIRE(train_migrating(sets, {"testing.rebalance_moves=[\"20:2>3\",\"52:3>2\"]"}) == 0);
  check_whole_epochs(dir / "async", 4);
  const auto moves = event_lines(dir / "async", "rebalance");
  REQUIRE(moves.size() == 2);
  CHECK(moves[0]["position"] == 20);
  CHECK(moves[1]["position"] == 52);
  for (const auto& m : moves) CHECK(m["restored_checksum"] == m["checksum"]);
  fs::remove_all(dir);
}

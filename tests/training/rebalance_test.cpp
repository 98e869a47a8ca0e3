// Online rebalancing: the rule over measured busy times, forced moves checked against the run, and a
// move between two phases that changes the placement, never the model: the same forward after it,
// and the same training as a pipeline restored with the new cut from the state before it.
#include "training/rebalance.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "tests/skip.hpp"
#include "tests/training/stage_tensors.hpp"
#include "training/setup.hpp"
#include "training/simulate_runtime.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("move_block: the block on the boundary moves, every stage keeps one") {
  const rebalance_move right = move_block({1, 3, 1}, 1, 2);
  CHECK(right.after == std::vector<int>{1, 2, 2});
  CHECK(right.block == 3);  // stem 0, stage 2 holds blocks 1-3: its last one goes right
  const rebalance_move left = move_block({1, 3, 1}, 1, 0);
  CHECK(left.after == std::vector<int>{2, 2, 1});
  CHECK(left.block == 1);
  CHECK_THROWS_AS(move_block({1, 3, 1}, 0, 1), std::invalid_argument);  // stage 1 would be empty
  CHECK_THROWS_AS(move_block({1, 3, 1}, 1, 3), std::invalid_argument);  // no stage 4
  CHECK_THROWS_AS(move_block({2, 3, 1}, 0, 2), std::invalid_argument);  // not neighbours
}

TEST_CASE("choose_move: the busiest stage gives a block to the neighbour that lowers the maximum most") {
  // Stage 2 (4 blocks, 8 s: 2 s each) is the busiest; to stage 3 predicts max(6, 3 + 2) = 6, to stage
  // 1 max(1 + 2, 6, 3) = 6 as well: a tie goes to the earlier stage.
  auto m = choose_move({1, 4, 1}, {1.0, 8.0, 3.0}, 0.05);
  REQUIRE(m);
  CHECK(m->from == 1);
  CHECK(m->to == 0);
  CHECK(m->predicted == std::vector<double>{3.0, 6.0, 3.0});
  CHECK(m->busy == std::vector<double>{1.0, 8.0, 3.0});
  CHECK_FALSE(m->forced);
  // The right neighbour lowers it more: 8 → max(6, 2 + 2) over max(7 + 2, 6).
  m = choose_move({1, 4, 1}, {7.0, 8.0, 2.0}, 0.05);
  REQUIRE(m);
  CHECK(m->to == 2);
  // Deterministic: the same times, the same move.
  CHECK(choose_move({1, 4, 1}, {7.0, 8.0, 2.0}, 0.05)->after == m->after);
  // Not by enough: 8 → 7.9 saves 1.25 %, under the margin.
  CHECK_FALSE(choose_move({2, 2}, {8.0, 3.9}, 0.05));
  CHECK(choose_move({2, 2}, {8.0, 3.9}, 0.0));
  // A busiest stage of one block has nothing to give; nothing measured, nothing to compare; a margin
  // of 1 never moves.
  CHECK_FALSE(choose_move({1, 3}, {9.0, 1.0}, 0.05));
  CHECK_FALSE(choose_move({2, 2}, {0.0, 0.0}, 0.05));
  CHECK_FALSE(choose_move({3, 1}, {9.0, 1.0}, 1.0));
}

TEST_CASE("forced moves: only at the run's points, each one the partition before it allows") {
  config::run_config c = config::load_config("tiny");  // 5 blocks
  c.training.epochs = 2;
  c.training.accumulation = 2;
  c.output.checkpoint_every_steps = 5;  // points every 10 micro-batches, and the epoch ends
  c.pipeline.rebalance = true;
  c.pipeline.stage_blocks = {1, 2, 1, 1};
  const int64_t per_epoch = 32;
  CHECK(is_rebalance_point(c, per_epoch, 10));
  CHECK(is_rebalance_point(c, per_epoch, 32));
  CHECK_FALSE(is_rebalance_point(c, per_epoch, 12));
  CHECK(is_rebalance_point(c, per_epoch, 40));
  // Drained at every epoch end, the phases of epoch 2 end at 42, 52, 62: so do its points.
  c.training.drain_at_epoch_end = true;
  CHECK(is_rebalance_point(c, per_epoch, 42));
  CHECK_FALSE(is_rebalance_point(c, per_epoch, 40));
  CHECK(is_rebalance_point(c, per_epoch, 30));
  CHECK(is_rebalance_point(c, per_epoch, 64));
  c.training.drain_at_epoch_end = false;
  c.testing.rebalance_moves = {{10, 2, 3}, {32, 3, 4}};
  CHECK_NOTHROW(check_forced_moves(c, 5, per_epoch));
  c.testing.rebalance_moves = {{12, 2, 3}};
  CHECK_THROWS_WITH_AS(check_forced_moves(c, 5, per_epoch),
                       doctest::Contains("entry 0 (12:2>3) is not a rebalancing point of this run"),
                       config::config_error);
  c.testing.rebalance_moves = {{64, 2, 3}};  // the end of the run
  CHECK_THROWS_AS(check_forced_moves(c, 5, per_epoch), config::config_error);
  c.testing.rebalance_moves = {{10, 2, 3}, {20, 2, 1}};  // stage 2 has one block left by then
  CHECK_THROWS_WITH_AS(
      check_forced_moves(c, 5, per_epoch),
      doctest::Contains("entry 1 (20:2>1) cannot be made: stage 2 of the partition [1,1,2,1]"),
      config::config_error);
  c.testing.rebalance_moves = {{10, 4, 5}};
  CHECK_THROWS_WITH_AS(check_forced_moves(c, 5, per_epoch), doctest::Contains("are not neighbours"),
                       config::config_error);
  // Forced moves replace the rule: there and only there, whatever the times say.
  c.testing.rebalance_moves = {{10, 2, 3}};
  const rebalancer forced(c);
  CHECK_FALSE(forced.decide(20, {1, 2, 1, 1}, {0.0, 9.0, 0.0, 0.0}));
  const auto m = forced.decide(10, {1, 2, 1, 1}, {1.0, 1.0, 1.0, 1.0});
  REQUIRE(m);
  CHECK(m->forced);
  CHECK(m->after == std::vector<int>{1, 1, 2, 1});
  CHECK(m->predicted.empty());
}

namespace {

/// The tiny model (5 blocks) on 128 Fashion-MNIST images, cut as `stage_blocks`, in simulate.
config::run_config tiny(const std::vector<int>& stage_blocks) {
  config::run_config c = config::load_config("tiny");
  c.pipeline.stage_blocks = stage_blocks;
  c.data.train_limit = 128;  // 16 micro-batches of 8
  c.data.test_limit = 32;
  return c;
}

struct runtime_on_data {
  training_data data;
  optimizer_settings opt;
  std::unique_ptr<pipeline_runtime> runtime;
  explicit runtime_on_data(const config::run_config& c) : data(load_training_data(c)) {
    opt = optimizer_for(c.training, data.train_feed->micro_batches_per_epoch() / c.training.accumulation);
    runtime = make_simulate_runtime(c, data, opt);
  }
};

}  // namespace

TEST_CASE("rebalance: after a move the forward on the same batches is the one before, bit for bit") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  runtime_on_data r(tiny({1, 2, 1, 1}));
  r.runtime->train(phase_request::of(1, 0, 8), {});  // weights, momentum and BN statistics moved on
  const eval_result before = r.runtime->evaluate(*r.data.test_feed);
  const auto state = tensors_by_name(*r.runtime);
  for (const std::vector<int>& cut : {std::vector<int>{1, 1, 2, 1}, std::vector<int>{1, 1, 1, 2}}) {
    CAPTURE(cut.size());
    r.runtime->repartition(cut);
    const eval_result after = r.runtime->evaluate(*r.data.test_feed);
    CHECK(after.loss == before.loss);  // the same logits: the same mean loss to the last bit
    CHECK(after.accuracy == before.accuracy);
    CHECK(differing_tensors(state, tensors_by_name(*r.runtime)) ==
          0);  // weights, momentum, BN statistics moved along
  }
}

TEST_CASE("rebalance: training on after a move = a pipeline cut that way from the state before it") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  runtime_on_data moved(tiny({1, 2, 1, 1}));
  moved.runtime->train(phase_request::of(1, 0, 8), {});
  checkpoint before;  // the drained state at the point, as written with the first cut
  before.stages = moved.runtime->snapshot();
  before.metadata["stage_blocks"] = "[1,2,1,1]";
  moved.runtime->repartition({1, 1, 2, 1});
  moved.runtime->train(phase_request::of(1, 8, 8), {});

  runtime_on_data cut(tiny({1, 1, 2, 1}));
  cut.runtime->restore(before);  // each stage takes its blocks' tensors by name
  cut.runtime->train(phase_request::of(1, 8, 8), {});
  CHECK(differing_tensors(tensors_by_name(*moved.runtime), tensors_by_name(*cut.runtime)) == 0);

  // The cut is not a no-op: where a block sits sets its delay, and so its training.
  runtime_on_data stayed(tiny({1, 2, 1, 1}));
  stayed.runtime->restore(before);
  stayed.runtime->train(phase_request::of(1, 8, 8), {});
  CHECK(differing_tensors(tensors_by_name(*moved.runtime), tensors_by_name(*stayed.runtime)) > 0);
}

TEST_CASE("simulate: an epoch split into phases times each stage from the epoch's start") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  runtime_on_data r(tiny({1, 2, 1, 1}));
  const phase_result first = r.runtime->train(phase_request::of(1, 0, 12), {});  // drained inside epoch 1
  REQUIRE(first.epochs.empty());
  const phase_result rest = r.runtime->train(phase_request::of(1, 12, 4), {});
  REQUIRE(rest.epochs.size() == 1);
  const std::vector<stage_report>& epoch = rest.epochs.front().stages;
  REQUIRE(epoch.size() == first.stages.size());
  for (std::size_t j = 0; j < epoch.size(); ++j) {
    CAPTURE(j);
    // The epoch began before the first phase did and ended after it: its time holds all of it.
    CHECK(epoch[j].wall_seconds >= first.stages[j].wall_seconds);
  }
}

// Epochs put together from their parts, and what a cut records of them: the epochs whole before it,
// so a run resumed from it waits for every other epoch that ends in its phase.
#include "training/epoch_collector.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace petra;

namespace {

/// Every part of `epoch` for a collector of `stages` stages and waves of one batch.
void add_all(epoch_collector& c, int epoch, std::size_t stages) {
  for (std::size_t j = 0; j < stages; ++j) {
    stage_report r;
    r.stage = static_cast<int32_t>(j);
    c.add_stage(epoch, r);
  }
  run_totals t;
  t.micro_batches = 4;
  t.samples = 32;
  c.add_loss(epoch, t);
  c.add_wave(epoch, 8.0, 5, 16);
}

}  // namespace

TEST_CASE("epoch collector: an epoch is whole with every stage's report, the loss totals and its wave") {
  std::vector<int> handed;
  epoch_collector c(2, 1, [&](epoch_result& e) { handed.push_back(e.epoch); });
  CHECK(c.done(1, 0));  // no epoch asked for
  stage_report r;
  r.stage = 0;
  c.add_stage(1, r);
  r.stage = 1;
  c.add_stage(1, r);
  run_totals t;
  c.add_loss(1, t);
  CHECK(handed.empty());
  CHECK_FALSE(c.done(1, 1));
  c.add_wave(1, 2.0, 1, 4);
  CHECK(handed == std::vector<int>{1});
  CHECK(c.done(1, 1));
  CHECK_FALSE(c.done(1, 2));
  add_all(c, 2, 2);
  CHECK(c.done(1, 2));
  CHECK(c.done_epochs() == std::vector<int>{1, 2});
}

TEST_CASE(
    "epoch collector: a cut right after an epoch's last micro-batch, before any of its parts, "
    "leaves the epoch to the resumed run") {
  // The run's first 32 micro-batches (epoch 1 of 32) entered before the cut; none of epoch 1's
  // reports had come: it is neither whole nor open at the cut.
  epoch_collector before(4, 1, [](epoch_result&) {});
  const epoch_collector shadow = before.shadow();
  const nlohmann::json open = shadow.save();
  const nlohmann::json done = shadow.done_epochs();
  CHECK(open.empty());
  CHECK(done.empty());

  std::vector<int> handed;
  epoch_collector resumed(4, 1, [&](epoch_result& e) { handed.push_back(e.epoch); });
  resumed.load(open);
  resumed.load_done(&done, 1);
  CHECK_FALSE(resumed.done(1, 2));  // the resumed phase waits for epoch 1 as well as epoch 2
  add_all(resumed, 2, 4);           // epoch 2's parts may come first
  CHECK_FALSE(resumed.done(1, 2));
  add_all(resumed, 1, 4);
  CHECK(resumed.done(1, 2));
  CHECK(handed == std::vector<int>{2, 1});
}

TEST_CASE("epoch collector: a cut records the epochs whole before it, across resumes") {
  epoch_collector first(2, 1, [](epoch_result&) {});
  add_all(first, 1, 2);
  const epoch_collector shadow = first.shadow();
  const nlohmann::json done = shadow.done_epochs();
  CHECK(done == nlohmann::json::array({1}));

  epoch_collector second(2, 1, [](epoch_result&) {});
  second.load(shadow.save());
  second.load_done(&done, 1);
  CHECK(second.done(1, 1));
  // A cut of the resumed run carries epoch 1 on.
  CHECK(second.shadow().done_epochs() == std::vector<int>{1});
}

TEST_CASE(
    "epoch collector: a cut of an earlier petra (no record of whole epochs) counts the ended, "
    "not open ones whole") {
  epoch_collector at_cut(2, 1, [](epoch_result&) {});
  stage_report r;
  r.stage = 0;
  at_cut.add_stage(2, r);  // epoch 2 open at the cut, epoch 1 logged before it
  const nlohmann::json open = at_cut.save();

  epoch_collector resumed(2, 1, [](epoch_result&) {});
  resumed.load(open);
  resumed.load_done(nullptr, 2);
  CHECK(resumed.done(1, 1));
  CHECK_FALSE(resumed.done(2, 2));

  epoch_collector damaged(2, 1, [](epoch_result&) {});
  const nlohmann::json bad = "not a list";
  CHECK_THROWS_WITH_AS(damaged.load_done(&bad, 0), doctest::Contains("whole epochs are damaged"),
                       std::runtime_error);
}

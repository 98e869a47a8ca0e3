// The loss ledger: epochs and waves close with their last batch and hold the sums of their own
// batches only; a ledger saved at a cut and read back goes on exactly as the one that was not.
#include "training/loss_ledger.hpp"

#include <doctest/doctest.h>

#include <optional>

#include "training/json_record.hpp"

namespace {

using petra::eval_sums;
using petra::run_totals;
using petra::training::loss_ledger;

/// Micro-batch `id`'s made-up score: mean loss, correct, samples.
struct score {
  double loss;
  int64_t correct, samples;
};
score of(int64_t id) { return {0.1 + 0.01 * static_cast<double>(id % 7), id % 5, 8}; }

}  // namespace

TEST_CASE("loss ledger: an epoch's tally closes with its last micro-batch and holds that epoch's only") {
  const int64_t per_epoch = 4;
  loss_ledger ledger;
  run_totals expected;
  for (int64_t id = per_epoch; id < 3 * per_epoch; ++id) {  // epochs 1 and 2 (ids from epoch 1's first)
    const score s = of(id);
    expected.add(s.loss, s.correct, s.samples);
    const auto done = ledger.score_train(id, per_epoch, s.loss, s.correct, s.samples);
    CHECK(done.has_value() == ((id + 1) % per_epoch == 0));
    if (done) {
      CHECK(done->epoch == id / per_epoch);
      CHECK(done->totals.micro_batches == per_epoch);
      CHECK(ledger.epochs.empty());
    }
  }
  CHECK(ledger.totals.micro_batches == expected.micro_batches);
  CHECK(ledger.totals.samples == expected.samples);
  CHECK(ledger.totals.correct == expected.correct);
  CHECK(ledger.totals.loss_sum == expected.loss_sum);  // the same additions in the same order
  const run_totals phase = ledger.end_phase();
  CHECK(phase.micro_batches == 2 * per_epoch);
  CHECK(ledger.totals.micro_batches == 0);
}

TEST_CASE("loss ledger: a wave closes with its wave_size-th batch, weighing every sample alike") {
  loss_ledger ledger;
  CHECK_FALSE(ledger.score_eval(1, 2, 0.5, 3, 4).has_value());
  const auto wave = ledger.score_eval(1, 2, 1.0, 1, 12);
  REQUIRE(wave.has_value());
  CHECK(wave->batches == 2);
  CHECK(wave->result().samples == 16);
  CHECK(wave->result().loss == doctest::Approx((0.5 * 4 + 1.0 * 12) / 16));
  CHECK(wave->result().accuracy == doctest::Approx(4.0 / 16));
  CHECK(ledger.waves.empty());
  CHECK(ledger.eval_scored == 2);
  CHECK(eval_sums{}.result().loss == 0);  // nothing scored: no division by zero
}

TEST_CASE("loss ledger: saved mid-epoch and read back, it closes the epoch exactly as without the cut") {
  const int64_t per_epoch = 6;
  loss_ledger straight, before_cut;
  std::optional<loss_ledger::epoch_tally> straight_done, resumed_done;
  for (int64_t id = per_epoch; id < 2 * per_epoch; ++id) {
    const score s = of(id);
    straight_done = straight.score_train(id, per_epoch, s.loss, s.correct, s.samples);
    if (id < per_epoch + 3) before_cut.score_train(id, per_epoch, s.loss, s.correct, s.samples);
  }
  before_cut.score_eval(0, 3, 0.25, 2, 8);
  loss_ledger resumed = petra::json_record::read<loss_ledger>(petra::json_record::write(before_cut));
  REQUIRE(resumed.epochs.size() == 1);
  REQUIRE(resumed.waves.size() == 1);
  CHECK(resumed.eval_scored == 1);
  for (int64_t id = per_epoch + 3; id < 2 * per_epoch; ++id) {
    const score s = of(id);
    resumed_done = resumed.score_train(id, per_epoch, s.loss, s.correct, s.samples);
  }
  REQUIRE(straight_done.has_value());
  REQUIRE(resumed_done.has_value());
  CHECK(resumed_done->totals.loss_sum == straight_done->totals.loss_sum);
  CHECK(resumed_done->totals.correct == straight_done->totals.correct);
  CHECK(resumed_done->totals.samples == straight_done->totals.samples);
  CHECK(resumed.totals.micro_batches == straight.totals.micro_batches);
}

TEST_CASE("json records: a missing or mistyped field is refused, naming it and where it was") {
  const nlohmann::json good = petra::json_record::write(run_totals{3, 24, 20, 1.5, 9});
  CHECK(good.dump() == R"({"correct":20,"loss_sum":1.5,"micro_batches":3,"samples":24,"ticks":9})");
  nlohmann::json missing = good;
  missing.erase("samples");
  CHECK_THROWS_WITH(petra::json_record::read<run_totals>(missing, "the cut"),
                    "the cut: \"samples\" is missing");
  nlohmann::json mistyped = good;
  mistyped["loss_sum"] = "high";
  CHECK_THROWS_WITH(petra::json_record::read<run_totals>(mistyped, "the cut"),
                    "the cut: \"loss_sum\" must be a number, got \"high\"");
}

// The loss ledger.
#include "training/loss_ledger.hpp"

#include <algorithm>

namespace petra {

run_totals& run_totals::operator+=(const run_totals& other) {
  micro_batches += other.micro_batches;
  samples += other.samples;
  correct += other.correct;
  loss_sum += other.loss_sum;
  ticks += other.ticks;
  return *this;
}

run_totals run_totals::since(const run_totals& earlier) const {
  run_totals out = *this;
  out.micro_batches -= earlier.micro_batches;
  out.samples -= earlier.samples;
  out.correct -= earlier.correct;
  out.loss_sum -= earlier.loss_sum;
  out.ticks -= earlier.ticks;
  return out;
}

void run_totals::add(double batch_mean_loss, int64_t batch_correct, int64_t batch_samples) {
  ++micro_batches;
  samples += batch_samples;
  correct += batch_correct;
  loss_sum += batch_mean_loss;
}

void eval_sums::add(double batch_mean_loss, int64_t batch_correct, int64_t batch_samples) {
  loss_sum += batch_mean_loss * static_cast<double>(batch_samples);
  correct += batch_correct;
  samples += batch_samples;
  ++batches;
}

eval_sums& eval_sums::operator+=(const eval_sums& other) {
  loss_sum += other.loss_sum;
  correct += other.correct;
  samples += other.samples;
  batches += other.batches;
  return *this;
}

eval_result eval_sums::result() const {
  eval_result r;
  r.samples = samples;
  if (samples > 0) {
    r.loss = loss_sum / static_cast<double>(samples);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(samples);
  }
  return r;
}

namespace training {
namespace {

/// The open entry of `epoch`, made when it is not there yet.
template <class Tally>
Tally& open(std::vector<Tally>& tallies, int32_t epoch) {
  auto it = std::find_if(tallies.begin(), tallies.end(), [&](const Tally& t) { return t.epoch == epoch; });
  if (it != tallies.end()) return *it;
  tallies.push_back(Tally{epoch, {}});
  return tallies.back();
}

template <class Tally>
Tally close(std::vector<Tally>& tallies, Tally& done) {
  Tally out = std::move(done);
  tallies.erase(tallies.begin() + (&done - tallies.data()));
  return out;
}

}  // namespace

std::optional<loss_ledger::epoch_tally> loss_ledger::score_train(int64_t id, int64_t per_epoch,
                                                                 double mean_loss, int64_t correct,
                                                                 int64_t samples) {
  totals.add(mean_loss, correct, samples);
  if (per_epoch <= 0) return std::nullopt;
  const auto epoch = static_cast<int32_t>(id / per_epoch);
  const bool is_open =
      std::any_of(epochs.begin(), epochs.end(), [&](const epoch_tally& t) { return t.epoch == epoch; });
  if (!is_open && epoch <= closed_epoch) return std::nullopt;  // handed back already
  epoch_tally& e = open(epochs, epoch);
  e.totals.add(mean_loss, correct, samples);
  if ((id + 1) % per_epoch != 0) return std::nullopt;
  closed_epoch = std::max(closed_epoch, epoch);
  return close(epochs, e);
}

std::optional<eval_sums> loss_ledger::score_eval(int32_t epoch, int64_t wave_size, double mean_loss,
                                                 int64_t correct, int64_t samples) {
  ++eval_scored;
  wave_tally& w = open(waves, epoch);
  w.sums.add(mean_loss, correct, samples);
  if (w.sums.batches != wave_size) return std::nullopt;
  return close(waves, w).sums;
}

run_totals loss_ledger::end_phase() {
  const run_totals out = totals;
  totals = run_totals{};
  eval_scored = 0;
  return out;
}

}  // namespace training
}  // namespace petra

// An epoch's measurements put together as they arrive — each stage's record when it finished the
// epoch's last backward, the loss of its micro-batches, its evaluation wave — and handed on when
// complete, whichever runtime delivers the parts.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "compute/pipeline/stage_report.hpp"
#include "training/faults.hpp"
#include "training/loss_ledger.hpp"

namespace petra {

/// One epoch as the runtime measured it.
struct epoch_result {
  int epoch = 0;
  run_totals train;                  // its micro-batches' loss and accuracy
  std::vector<stage_report> stages;  // each stage over the epoch
  std::vector<fault_counts> faults;  // injected while it ran
  bool evaluated = false;            // by an evaluation wave on the live weights
  eval_result test;
};

class epoch_collector {
 public:
  /// `wave_size` evaluation batches per epoch (0: epochs are complete without a test result).
  epoch_collector(std::size_t stages, int64_t wave_size, std::function<void(epoch_result&)> on_complete);

  void add_stage(int epoch, const stage_report& r);
  void add_loss(int epoch, const run_totals& totals);
  /// `items` batches of the epoch's wave: Σ of their samples' losses, correct predictions, samples.
  void add_eval(int epoch, double loss_sum, int64_t correct, int64_t samples, int64_t items);
  /// A copy that hands nothing on (what the epochs were at a cut, fed the parts sent before it).
  epoch_collector shadow() const {
    epoch_collector c = *this;
    c.on_complete_ = [](epoch_result&) {};
    return c;
  }
  /// The epochs still open (a snapshot's part), and their restore into an empty collector.
  nlohmann::json save() const;
  void load(const nlohmann::json& open);
  /// Epochs handed on so far.
  std::size_t completed() const { return completed_; }
  /// Whether every epoch first..last was handed on here, or was whole at the cut this collector
  /// resumed from (mark_done).
  bool done(int first, int last) const;
  /// The epochs handed on (a cut's record: those whole before it).
  std::vector<int> done_epochs() const { return {done_.begin(), done_.end()}; }
  /// After load: the epochs whole at the cut, as it recorded them (done_epochs), or, for a cut
  /// that did not (`done` null: an earlier petra's), every epoch up to `ended` that is not open.
  void load_done(const nlohmann::json* done, int ended);
  /// A whole wave at once.
  void add_wave(int epoch, double loss_sum, int64_t correct, int64_t samples) {
    add_eval(epoch, loss_sum, correct, samples, wave_size_);
  }

 private:
  struct partial {
    epoch_result result;
    std::size_t stages_in = 0;
    bool loss_in = false;
    eval_sums wave;  // its evaluation batches scored so far
  };
  template <class Fields>
  friend void describe(Fields& f, partial& p) {
    f("epoch", p.result.epoch);
    f("train", p.result.train);
    f("stages", p.result.stages);
    f("stages_in", p.stages_in);
    f("loss_in", p.loss_in);
    f("wave", p.wave);
  }
  partial& at(int epoch);
  void complete_if_done(int epoch);

  std::size_t stages_;
  int64_t wave_size_;
  std::function<void(epoch_result&)> on_complete_;
  std::map<int, partial> open_;
  std::size_t completed_ = 0;
  std::set<int> done_;
};

}  // namespace petra

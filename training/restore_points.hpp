// Where a run can restart from, and where they are made: drained checkpoints at phase ends, and
// snapshots of the running pipeline (cuts) where the runtime takes them.
#pragma once

#include <cstdint>
#include <vector>

#include "training/prepared_run.hpp"
#include "training/run_dir.hpp"

namespace petra {

/// train_options::stop_after_snapshots reached: the run ends there, nothing more written.
struct stopped_at_snapshot {
  int64_t position;
};

class restore_points {
 public:
  restore_points(prepared_run& p, const train_options& options, run_dir& dir);

  /// Where the phase that starts at position `g` (counted from epoch 1's first micro-batch) ends:
  /// the pipeline drains there. Every output.checkpoint_every_steps when the runtime takes no
  /// cuts, at a --stop-after-epoch point, at the end of training, and, when
  /// training.drain_at_epoch_end is set, at every epoch end.
  int64_t phase_end(int64_t g, int64_t end) const;

  /// The micro-batches of the phase [g, next) before which a runtime that takes cuts snapshots the
  /// running pipeline (counted from g): every output.checkpoint_every_steps optimizer steps and,
  /// when epochs do not drain, at every epoch end (the epoch-end checkpoint).
  std::vector<int64_t> cuts_in(int64_t g, int64_t next) const;

  /// Writes the snapshot of a cut taken before micro-batch `index` of `phase` entered.
  void snapshot(const phase_request& phase, int64_t index, const pipeline_cut& cut);

  /// Writes checkpoint.safetensors: every stage's state, drained, at (epoch, position).
  void checkpoint(int epoch, int64_t position);

  /// Stage-local recovery: stage j's state in the last snapshot of the run (written by this process
  /// or resumed from), else in the last checkpoint.
  restored_stage stage_state(std::size_t j) const;

  /// The position of the last snapshot this process wrote (−1: none).
  int64_t last_snapshot() const { return last_snapshot_; }

 private:
  bool waves() const { return !p_.cfg.training.drain_at_epoch_end; }

  prepared_run& p_;
  const train_options& options_;
  run_dir& dir_;
  int written_ = 0;
  int64_t last_snapshot_ = -1;
};

}  // namespace petra

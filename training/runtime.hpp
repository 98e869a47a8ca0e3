// What the trainer loop drives, whatever runs the schedule: the reference simulator or the actor
// runtimes. A runtime trains phases that end drained, evaluates, and saves and restores its stages.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "compute/pipeline/stage_report.hpp"
#include "config/config.hpp"
#include "training/checkpoint.hpp"
#include "training/cut.hpp"
#include "training/epoch_collector.hpp"
#include "training/evaluate.hpp"
#include "training/faults.hpp"
#include "training/simulator.hpp"
#include "training/stage_window.hpp"

namespace petra {

/// One phase: `count` training micro-batches from micro-batch `first` of `epoch` (1-based) on,
/// crossing epoch ends; with `evaluation_waves`, each epoch that ends in it is evaluated on the
/// live weights by a wave of test batches that follows its last micro-batch into the pipeline.
/// attempt > 0 replays it after a rollback (injected faults stay off). A runtime that takes cuts
/// (takes_cuts) cuts the running pipeline before each micro-batch of `cut_before` (counted from
/// the phase's first, ascending, each in 1 .. count−1) enters, and with `resume` continues the phase
/// from a cut an earlier attempt or process took.
/// The state a stage rebuilt alone starts from (stage-local recovery, docs/design.md §6): its part of
/// the last snapshot, or of the last checkpoint.
struct restored_stage {
  stage_snapshot state;
  std::string from;  // "snapshot" | "checkpoint"
};

/// A failure the runtime recovered from by rebuilding only the lost stages.
struct local_recovery {
  failure_kind kind = failure_kind::lost_actor;
  int32_t stage = -1;  // where it was noticed (0-based)
  std::string what;
  std::vector<int32_t> stages;  // rebuilt (0-based)
  std::string from;             // where their state came from
  int64_t lost = 0;             // micro-batches whose backward was lost with them: not completed
  int64_t reissued = 0;         // ... and sent again by the loader (async): completed by their re-issue
  double seconds = 0;           // from the failure to the pipeline running again
};

struct phase_request {
  int epoch = 1;
  int64_t first = 0;
  int64_t count = 0;
  int attempt = 0;
  bool evaluation_waves = false;
  std::vector<int64_t> cut_before;
  std::shared_ptr<const pipeline_cut> resume;
  /// Stage-local recovery (the actor runtimes): the state of a stage to rebuild, or nullopt when no
  /// more recoveries are allowed (faults.max_restarts). Empty: every failure ends the attempt.
  std::function<std::optional<restored_stage>(std::size_t stage)> local_state;
  /// Told of each stage-local recovery.
  std::function<void(const local_recovery&)> on_local_recovery;

  /// `count` micro-batches from `first` of `epoch`: a first attempt, drained epochs, no cuts.
  static phase_request of(int epoch, int64_t first, int64_t count) {
    phase_request r;
    r.epoch = epoch, r.first = first, r.count = count;
    return r;
  }
};

/// A stage moved to another place (live migration): where from and to, its state's bytes and the
/// seconds the move took (the pipeline stood drained all along).
struct migration_done {
  std::string from, to;  // targets as written (config::migration_target::str)
  int64_t bytes = 0;
  double seconds = 0;
  uint64_t checksum = 0;           // of the state the old actor gave (state_checksum)
  uint64_t restored_checksum = 0;  // of the state the new actor held right after taking it
};

/// A migration the runtime will not make; the run goes on with the stage where it was.
struct migration_refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a phase did, as measured by whoever ran it.
struct phase_result : run_totals {
  int64_t completed = 0;             // micro-batches whose backward finished at stage 1
  std::vector<stage_report> stages;  // per stage, since its last epoch ended
  std::vector<fault_counts> faults;  // per stage, injected in the phase
  std::vector<epoch_result> epochs;  // the epochs that ended in the phase (also given to epoch_fn)
};

/// Where a phase stands: its totals so far and, when per-step metrics are on
/// (output.metrics_every_steps), each stage's latest window of optimizer steps.
struct progress_sample {
  run_totals totals;
  std::vector<stage_window> stages;  // per stage; empty when per-step metrics are off
};

/// Called as micro-batches complete.
using progress_fn = std::function<void(const progress_sample&)>;

/// Called as epochs end inside a phase.
using epoch_fn = std::function<void(const epoch_result&)>;

/// Called with each cut of a phase, taken before its micro-batch `index` (counted from the phase's
/// first) entered; the runtime has put its own state in cut.driver.
using cut_fn = std::function<void(int64_t index, const pipeline_cut& cut)>;

class pipeline_runtime {
 public:
  virtual ~pipeline_runtime() = default;
  /// Runs a phase to its drained end; throws run_failure when the attempt fails. The request is the
  /// runtime's: once the stages have their parts of `phase.resume`, it may keep the cut's counts only
  /// and let its tensors go (an async run is one phase: a cut held to its end costs a snapshot's size).
  virtual phase_result train(phase_request phase, const progress_fn& progress, const epoch_fn& on_epoch = {},
                             const cut_fn& on_cut = {}) = 0;
  /// Whether train() takes consistent cuts without a drain (else phases end where a checkpoint is due).
  virtual bool takes_cuts() const { return false; }
  /// Mean loss and accuracy on the feed, with running BN statistics (the one eval loop).
  virtual eval_result evaluate(data_feed& test) = 0;
  /// Drained: every stage's running BN statistics re-estimated under the current weights, as the
  /// mean of the batch statistics of the feed's first `micro_batches` (training.bn_recalibration).
  virtual void recalibrate(data_feed& feed, int64_t micro_batches) = 0;
  /// Every stage's state (weights, momentum, BN buffers, optimizer steps).
  virtual std::vector<stage_snapshot> snapshot() = 0;
  /// Restores every stage from a checkpoint.
  virtual void restore(const checkpoint& from) = 0;
  /// After a failure: tears the pipeline down and builds it again (stages of a lost node move to a
  /// spare node). The caller then restores the last checkpoint.
  virtual void recover() = 0;
  /// Drained (between phases): cuts the model into stages of `stage_blocks` blocks instead, each
  /// block's weights, momentum and BN statistics moving with it (pipeline.rebalance). The running
  /// epoch's records go on (its scores, and each stage's record in the stage now at its place), so
  /// that its line counts the whole epoch. A runtime that cannot refuses the key before the run starts.
  virtual void repartition(const std::vector<int>& stage_blocks) {
    (void)stage_blocks;
    throw std::logic_error("this runtime does not repartition (pipeline.rebalance is refused for it)");
  }
  /// Drained (between phases): moves stage `stage` (0-based) to `to`: its state (weights, momentum,
  /// BN buffers, optimizer steps) leaves the old actor for a new one there, whose neighbours, loss
  /// actor and loader are wired to it; the old one stops. Throws migration_refused when this runtime
  /// or this target cannot have it, with the stage left where it was.
  virtual migration_done migrate(std::size_t stage, const config::migration_target& to) {
    (void)stage, (void)to;
    throw migration_refused(
        "this runtime has no stage actors to move (live migration needs runtime.mode lockstep)");
  }
  /// The learning rate stage 1 applies at its optimizer step `steps` (counted from 0): with
  /// `steps` taken, the rate of its next one. An epoch's record gives the rate after the epoch's
  /// last step, whenever the record arrives (without a drain: during the next epoch).
  virtual double first_stage_lr(int64_t steps) = 0;
  /// Writes the run's timeline (output.trace) to `path`; a runtime that records none refuses the key.
  virtual void write_trace(const std::string& path) = 0;
};

}  // namespace petra

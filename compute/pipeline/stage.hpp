// Stage: a run of blocks with its optimizer, its input FIFO (only if it keeps inputs)
// and its weight stash (only for the stash baselines). It knows nothing of actors.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "compute/blocks/block.hpp"
#include "compute/optimizer.hpp"
#include "compute/pipeline/fallback_policy.hpp"
#include "compute/pipeline/overlapped_backward.hpp"
#include "compute/pipeline/rebuild_lane.hpp"

namespace petra {

struct stage_options {
  bool keep_inputs = false;    // forced on when a block is not reversible
  bool stash_weights = false;  // backward with the weights its forward used
  bool taped = false;          // backprop: the forward keeps its tape, the backward (next) uses it
  // The last stage of a pipeline method: its backward follows its forward with the same weights, so
  // the forward keeps its tape and its input (sent back exact), and the backward runs no forward.
  bool tape_forward = false;
  int inversion_sample_every = 0;  // measure ‖x̃ − x‖/‖x‖ on 1 in N micro-batches (reversible stages)
  // A rebuilding stage keeps its inputs while its sampled error drifts above this (fallback_policy);
  // 0 = never.
  double max_inversion_error = 0;
};

/// What a stage measured of itself since its statistics were last reset: every runtime reads
/// the same record (docs/design.md §3).
struct stage_stats {
  int64_t forwards = 0;
  int64_t backwards = 0;
  std::map<int64_t, int64_t> delay_ticks;      // tick of backward − tick of forward → micro-batches
  std::map<int64_t, int64_t> staleness_steps;  // optimizer steps between forward and backward → micro-batches
  std::size_t fifo_peak = 0;                   // inputs held at once (kept inputs and inversion samples)
  std::size_t fifo_peak_bytes = 0;
  std::size_t stash_peak = 0;  // weight versions held at once (besides the live one)
  std::size_t stash_peak_bytes = 0;
  int64_t inversion_samples = 0;
  double inversion_error_sum = 0.0;  // Σ ‖x̃ − x‖/‖x‖
  double inversion_error_max = 0.0;
  int64_t fallback_forwards = 0;  // forwards of a rebuilding stage that kept their input (fallback)
  int64_t fallback_switches = 0;  // fallback mode changes, into keeping inputs and back
  int64_t rebuilds_ahead = 0;     // backwards whose last block's rebuild began ahead (rebuild_ahead)
  /// Adds a later period's record of the same stage: counts and histograms add, peaks take the maximum.
  void add(const stage_stats& later);
};

class stage {
 public:
  stage(int index, std::vector<std::unique_ptr<block>> blocks, backend& be,
        const optimizer_settings& optimizer, stage_options options);
  ~stage();  // waits for a rebuild started ahead
  stage(const stage&) = delete;
  stage& operator=(const stage&) = delete;

  int index() const { return index_; }
  /// The backend this stage computes on (its device and stream).
  backend& compute_backend() const { return be_; }
  /// Every block reversible: the stage rebuilds its input instead of keeping it.
  bool reversible() const { return reversible_; }
  /// A rebuilding stage whose rebuilds drifted: its forwards keep their inputs for now.
  bool falls_back() const { return fallback_.keeping(); }
  /// Whether export_inflight can take this stage's state now: a stage that tapes its forward cannot
  /// while the tape of its micro-batch in flight is live (a tape is not a snapshot's content).
  bool can_export_inflight() const { return taped_.empty(); }
  /// Optimizer steps taken so far: the version of the live weights.
  int64_t weight_version() const { return optimizer_.steps_taken(); }

  /// The training forward of micro-batch `id` at `tick` (batch statistics; running statistics
  /// updated once). The tick is the runtime's clock (lockstep tick, or this stage's forward count).
  activation forward(const activation& x, int64_t id, int64_t tick);
  /// forward() with the blocks run by `through` (x → their output in a training pass that leaves the
  /// running statistics as the forward does; forward mode carrying tangents beside it, for one), so
  /// a forward that computes more than the output runs the blocks once. Not for a stage that tapes
  /// its forward.
  activation forward_with(const activation& x, int64_t id, int64_t tick,
                          const std::function<activation(const activation&)>& through);

  struct backward_result {
    activation input;  // rebuilt input (exact: the kept one); undefined for a taped stage
    activation input_grad;
    int64_t forward_version;  // weight version its forward used
    bool stepped = false;     // this backward completed k of them: the optimizer stepped, at:
    std::chrono::steady_clock::time_point step_begin, step_end;
  };
  /// The backward of micro-batch `id` at `tick`, which must be the oldest outstanding one: rebuild
  /// (or pop) the input, differentiate at it, accumulate Δ; after every k-th backward, an optimizer
  /// step. Records delay = tick − forward tick and staleness = steps taken since the forward.
  /// `input_ready`: an overlapping stage calls it with the rebuilt input (the tensors of
  /// backward_result::input) as soon as it has it, before its first block's gradients, so that the
  /// stage before can start its own rebuild from it (rebuild_ahead) while these are computed.
  backward_result backward(const activation& output, const activation& output_grad, int64_t id, int64_t tick,
                           const std::function<void(const activation&)>& input_ready = {});

  /// A backward that rebuilds its input block by block could overlap those rebuilds with the
  /// gradients (not a stage that keeps inputs or a tape). With one block there is nothing to overlap
  /// inside the stage, but its rebuild can start ahead (rebuild_ahead) and its input go ahead.
  bool can_overlap_rebuild() const { return !options_.keep_inputs && !options_.taped; }
  /// From now on the backward rebuilds block i−1's input on `rebuild` (a second stream of this
  /// stage's device) while it computes block i's gradients (PaReprop): the same ops on the same data.
  void overlap_rebuild(std::unique_ptr<backend> rebuild);
  bool overlaps_rebuild() const { return lane_ != nullptr; }
  /// PaReprop across stages: `output`, the rebuilt output of micro-batch `id`'s backward, sent ahead
  /// of its gradient by the stage after this one. An overlapping stage whose next backward is `id`'s
  /// (and rebuilds) starts its last block's rebuild from it now, on its second stream, with the
  /// weights it has now; returns whether it did. The backward of `id` then takes that rebuild when
  /// its output is these same tensors and no optimizer step came between (the same ops on the same
  /// data: the same bits); otherwise it drops it. Anything that may write the weights or change what
  /// is outstanding (parameters(), buffers(), blocks(), optimizer(), drop, import_inflight) drops it too.
  bool rebuild_ahead(const activation& output, int64_t id);
  /// Whether a rebuild started ahead is waiting for its backward.
  bool has_rebuild_ahead() const { return ahead_ != nullptr; }

  /// Evaluation forward (running statistics, nothing kept).
  activation evaluate(const activation& x);
  /// A forward that re-estimates the running BN statistics (pass::calibrate): a run of calibrate
  /// calls leaves them the mean of the batch statistics of its inputs under the current weights.
  /// Nothing is kept and no weight changes; the output goes on to the next stage's calibrate.
  activation calibrate(const activation& x);

  std::vector<parameter*> parameters();
  std::vector<buffer_ref> buffers();
  std::vector<std::unique_ptr<block>>& blocks() {
    cancel_rebuild_ahead();
    return blocks_;
  }
  param_optimizer& optimizer() {
    cancel_rebuild_ahead();
    return optimizer_;
  }
  const stage_stats& stats() const { return stats_; }
  /// Starts a new measurement period (the peaks restart from what is held now).
  void reset_stats();
  /// Goes on from `earlier`, the record of the period so far that the stage this one replaces kept
  /// (the model cut anew at a drained point: earlier + this stage's own since).
  void continue_stats(const stage_stats& earlier);
  std::size_t outstanding() const { return outstanding_.size(); }
  /// The micro-batch whose backward must come next (-1 when none is outstanding).
  int64_t next_backward_id() const { return outstanding_.empty() ? -1 : outstanding_.front().id; }
  /// The outstanding forwards' micro-batches, oldest first.
  std::vector<int64_t> outstanding_ids() const;
  /// Forgets the outstanding forwards of the micro-batches `lost` says true for (stage-local
  /// recovery: their backward will never come): their kept inputs, their stashed weights, a
  /// backprop stage's tape. Nothing is accumulated or stepped. Returns the ids dropped, oldest first.
  std::vector<int64_t> drop(const std::function<bool(int64_t)>& lost);

  /// What the stage holds for the micro-batches in flight, beyond its weights: each outstanding
  /// forward (with the input it keeps, if any), the stashed weight versions and how many of their
  /// forwards are outstanding, the backwards accumulated toward the next optimizer step and their
  /// summed gradients. Part of a consistent snapshot; tensors are host copies.
  struct inflight {
    struct forward_entry {
      int64_t id = 0, version = 0, tick = 0;
      activation input;
      bool kept = false;  // its backward takes `input` (the exact-input path), else it rebuilds
    };
    struct stash_entry {
      int64_t version = 0, users = 0;
      std::vector<tensor> weights;  // in parameters() order
    };
    std::vector<forward_entry> outstanding;
    std::vector<stash_entry> stash;
    int64_t accumulated = 0;
    std::vector<tensor> grads;  // in parameters() order; empty when accumulated is 0
    stage_stats stats;          // its record since the last reset_stats
    fallback_state fallback;    // the fallback's mode and its window of samples
  };
  /// Throws std::logic_error while a forward's tape is live (its micro-batch's backward comes next).
  inflight export_inflight();
  /// Replaces what is in flight with `from` (shapes checked).
  void import_inflight(const inflight& from);

  /// Bytes of parameters, of optimizer state (gradients, momentum or AdamW's moments) and of BN
  /// running statistics.
  std::size_t parameter_bytes();
  std::size_t optimizer_state_bytes();
  std::size_t buffer_bytes();

 private:
  struct pending {
    int64_t id;
    int64_t version;
    int64_t tick;
    activation input;  // kept input, or the sample for the inversion error
    bool kept;         // taken keeping inputs: the backward takes `input` instead of rebuilding
  };
  activation forward_taped(const activation& x);
  activation backward_taped(const activation& output_grad);
  /// After a backward: the optimizer step when k backwards have accumulated (timed into `r`).
  void step_if_due(backward_result& r);
  void stash_current_weights();
  void release_stash(int64_t version);
  void swap_in(int64_t version);
  void update_fifo_stats();
  /// Whether micro-batch `id`'s rebuild is measured (1 in inversion_sample_every, rebuilding stages).
  bool sampled(int64_t id) const;
  /// Records a sampled error ‖x̃ − x‖/‖x‖ and lets the fallback decide the next forwards' mode.
  void record_inversion_error(const activation& rebuilt, const activation& truth);
  double inversion_error(const activation& rebuilt, const activation& truth);

  int index_;
  std::vector<std::unique_ptr<block>> blocks_;
  backend& be_;
  stage_options options_;
  bool reversible_;
  std::vector<parameter*> params_;
  param_optimizer optimizer_;
  std::deque<pending> outstanding_;
  std::map<int64_t, std::vector<tensor>> stash_;  // version → weight values
  std::map<int64_t, int64_t> stash_users_;        // version → outstanding forwards using it
  tape taped_;                                    // the backprop tape (one micro-batch)
  int64_t accumulated_ = 0;                       // backwards since the last optimizer step
  stage_stats stats_;
  /// Drops a rebuild started ahead (waits for the lane: its task reads `ahead_`).
  void cancel_rebuild_ahead();

  struct ahead_state {
    int64_t id = -1;
    int64_t version = 0;  // the weights it read
    activation output;    // the tensors it started from
    rebuild_started started;
  };
  /// A rebuild started ahead, taken by its backward: the lane is waited for before it goes.
  struct ahead_taken {
    rebuild_lane* lane;
    std::unique_ptr<ahead_state> state;
    ~ahead_taken();
  };
  std::unique_ptr<rebuild_lane> lane_;  // set by overlap_rebuild
  std::unique_ptr<ahead_state> ahead_;  // set by rebuild_ahead, taken by the backward of its id
  fallback_policy fallback_;
};

}  // namespace petra

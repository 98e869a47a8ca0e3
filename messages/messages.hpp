// The typed messages between petra's actors. Every message is stamped so that delays and
// staleness are measured from what actually travelled, not assumed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/parameter.hpp"
#include "compute/pipeline/stage_report.hpp"
#include "compute/pipeline/stage_state.hpp"
#include "compute/pipeline/stage_tangent.hpp"
#include "compute/tensor.hpp"

namespace petra::messages {

/// Who sent what, when: micro-batch id, the tick it is for (lockstep; -1 in async),
/// the sender's weight version (optimizer steps taken) and the sending stage (0-based; -1 = loader).
struct stamp {
  int64_t micro_batch = -1;
  int64_t tick = -1;
  int64_t weight_version = 0;
  int32_t sender = -1;
  int64_t phase = 0;  // the coordinator's phase number: a late copy from an earlier phase is stale
  // The sending stage's generation: the pipeline build it belongs to, renewed when it is rebuilt alone.
  // A message of an older one comes from a stage that was declared lost (a node that hung and woke
  // up): fenced, dropped.
  int32_t generation = 0;
};

/// Forward: one activation. In lockstep an undefined activation is the marker of a tick
/// with nothing to forward (pipeline fill and drain). In async (where stamps carry tick −1) a
/// forward or backward message with a tick ≥ 0 and nothing else is the snapshot marker of the cut
/// before that tick (docs/design.md §4).
struct forward_data {
  stamp s;
  activation x;
  int32_t eval_epoch = 0;   // with an evaluation batch of epoch eval_epoch's wave beside it:
  int64_t eval_index = -1;  // its place in the wave (-1 = none)
  activation eval_x{};
  // forward_gradient: the micro-batch's labels (each stage's auxiliary head trains on them; the loader
  // puts them beside the images) and the tangents that travel with the activation.
  std::vector<int32_t> labels{};
  std::vector<stage_tangent> tangents{};
};

/// Backward: the pair (rebuilt output of the receiving stage, its gradient); empty = marker.
struct backward_data {
  stamp s;
  activation rebuilt;
  activation grad;
};

/// The labels of one micro-batch, from the loader to the loss actor.
struct labels_data {
  int64_t micro_batch = -1;  // or, for an evaluation batch, its place in the wave
  std::vector<int32_t> labels;
  int32_t eval_epoch = -1;  // -1 = training labels; else the wave of this epoch
};

/// The last stage's logits, to the loss actor.
struct logits_data {
  stamp s;  // for an evaluation batch: micro_batch is its place in the wave
  tensor logits;
  int32_t eval_epoch = -1;                // -1 = training logits; else of this epoch's wave
  std::vector<stage_tangent> tangents{};  // forward_gradient: the logits' tangent along each stage's guess
};

/// forward_gradient's only upstream message, from the loss actor to the stage whose guess it answers:
/// d_n = ⟨∇_{z_j} L, G̃_j⟩ per sample n (L the micro-batch's mean loss), stamped like the logits it comes
/// from but for the next tick.
struct derivatives_data {
  stamp s;
  int32_t stage = -1;  // j, the stage whose guess G̃_j the derivatives project on
  std::vector<float> per_sample;
};

/// The loss actor's answer, to the last stage (training: stamped like the logits it answers) or to
/// the coordinator (evaluation): dL/dlogits (mean over the micro-batch) and the metrics.
struct loss_data {
  stamp s;
  tensor dlogits;
  double loss = 0;
  int64_t correct = 0;
  int64_t samples = 0;
};

/// Credits back to the loader (from stage 1, or the loss actor for an evaluation batch): `count`
/// micro-batches of phase `phase` left the pipeline, so as many more may enter. A credit stamped
/// with a later phase than the loader's plan counts there when that plan comes.
struct credit_return {
  int64_t count = 1;
  int64_t phase = 0;
  int64_t micro_batch = -1;  // async, from stage 1: the micro-batch it completed (the loader's record)
};

/// A marker of the cut before tick `tick`, to the loss actor (lockstep and async): the last stage's
/// (every logits message it sent before the cut is in) or the loader's (every label of the batches
/// that entered before the cut is in); the loss side's part is whole after both.
struct cut_marker {
  int64_t tick = -1;
  bool from_loader = false;
};

/// One evaluation batch flowing forward through every stage (running BN statistics), or with
/// `calibrate` one batch of a recalibration (stage::calibrate: batch statistics, which the running
/// ones become the mean of).
struct eval_data {
  int64_t batch = -1;
  activation x;
  bool calibrate = false;
};

/// What the coordinator asks of one training phase (an epoch, or part of one).
struct phase_plan {
  int32_t epoch = 0;
  int64_t micro_batches = 0;      // to feed
  int64_t ticks = 0;              // lockstep: ticks every stage runs
  int64_t first_micro_batch = 0;  // position in the epoch of the first micro-batch to feed
  int64_t spacing = 1;            // lockstep: a micro-batch enters every `spacing` ticks (backprop: 2J − 1)
  int32_t attempt = 0;     // 0 = the first run of this phase; > 0 = a replay after a rollback (no faults)
  int32_t generation = 0;  // the coordinator's pipeline build: reports of older builds are stale
  int64_t phase = 0;       // numbers the phases of a run; every message carries it
  int64_t per_epoch = 0;   // micro-batches per epoch (ids of epoch e: e·per_epoch ...)
  int64_t eval_items = 0;  // evaluation batches that pass each stage in this phase (all its waves)
  std::vector<int64_t> cut_ticks{};  // a consistent cut before each of these ticks
  int64_t start_tick = 0;            // > 0 when the phase resumes from a cut before it
  int64_t in_flight = 0;             // async, resuming: loader messages not yet given back as credits
};

/// One part of a consistent cut, to the coordinator: a stage's (its state, what it holds in
/// flight, its messages for the cut's tick) or, with stage −1, the loss actor's (labels not used
/// yet, totals so far). Also the same part back to its owner when a phase resumes from the cut.
struct cut_part {
  int32_t stage = -1;
  int64_t tick = -1;
  int64_t phase = 0;
  std::vector<named_tensor> tensors;
  std::string meta;  // JSON
};

/// Stage-local recovery (async runtime, docs/design.md §6). A held stage's answer says where it stands:
/// the last micro-batch it forwarded (drop_upto), its training forwards, backwards and evaluation
/// batches of the phase, and its outstanding micro-batches whose backward had not come (cancel: lost
/// with the stages after it). An order to a stage says what to forget and what to count, then it
/// goes on: the micro-batches in `cancel`, every micro-batch up to `drop_upto`, and the counts it
/// takes over (-1 = keep its own); a snapshot in progress is given up.
struct recovery_order {
  int64_t phase = 0;
  int64_t drop_upto = -1;
  int64_t forwards_done = -1;
  int64_t backwards_done = -1;
  int64_t evals_done = -1;
  std::vector<int64_t> cancel;
  int64_t abandon_cuts = -1;  // cuts up to this tick are given up: their markers are ignored
  // Lockstep. A held stage: the tick it runs next, and the first ticks (from it on) whose forward and
  // backward inputs it does not hold yet. To a rebuilt stage: the tick it starts at, the ticks up to
  // which its neighbours' messages were lost (it runs them as markers), and the ticks from which on
  // its neighbours still need its messages.
  int64_t tick = -1;
  int64_t forward_markers_upto = -1, backward_markers_upto = -1;
  int64_t needs_forward_from = -1, needs_backward_from = -1;
  // The lost micro-batches the loader sends again, in this order. Each stage forgets them until
  // their new forward comes; the loss actor until their labels come again.
  std::vector<int64_t> reissue;
  // Lockstep, when re-issuing: the k-th of `reissue` enters stage 1 at tick reissue_tick + k (after
  // every planned tick), and the phase runs `ticks` ticks from now on (-1 = unchanged).
  int64_t reissue_tick = -1;
  int64_t ticks = -1;
};

/// The faults one stage injects (docs/design.md §6), from the run's `faults` config.
struct stage_faults {
  int64_t forward_delay = 0;      // on its forward link (ticks in lockstep, ms in async)
  int64_t backward_delay = 0;     // on its backward link (to stage j − 1)
  int64_t in_forward_delay = 0;   // lockstep: the delay of the link into it, forward
  int64_t in_backward_delay = 0;  // lockstep: the delay of the link into it, backward
  int64_t jitter_ms = 0;
  double drop = 0, duplicate = 0, reorder = 0;
  double slow = 1;
  int64_t crash_at_tick = -1;
  int64_t drop_burst = 0;           // messages lost in a row on its forward link...
  int64_t drop_burst_at_tick = -1;  // ...from this tick (lockstep) or forward (async) on; -1 = never
  uint64_t seed = 1;
};

/// Kinds of fault events, as the stage that injected or observed them counts them.
/// `fenced`: a late message of a stage declared lost, dropped by its receiver.
enum class fault_kind : uint8_t { drop, duplicate, reorder, delay, slow, crash, duplicate_discarded, fenced };

/// One injected fault (or a discarded copy), reported to the coordinator as it happens, so that the
/// faults of an attempt that fails are counted too.
struct fault_event {
  int32_t stage = -1;
  fault_kind kind = fault_kind::drop;
  int32_t generation = 0;
};

/// The loss actor's totals over one phase, and progress while it runs.
struct loss_report {
  int64_t micro_batches = 0;
  int64_t samples = 0;
  int64_t correct = 0;
  double loss_sum = 0;  // Σ over micro-batches of their mean loss
};

/// A failure inside an actor, carried to the coordinator: which stage (-1 = not a stage), at
/// which tick or micro-batch, its error code (petra_errc) and what happened.
struct failure_report {
  int32_t stage = -1;
  int64_t tick = -1;
  int64_t micro_batch = -1;
  uint8_t code = 0;
  std::string what;
  int32_t generation = 0;  // of the plan it happened in
};

/// Where a stage stands in its phase: the coordinator's view when progress stops.
struct stage_status {
  int32_t stage = -1;
  bool in_phase = false;
  int64_t tick = 0;               // lockstep: the tick it runs next; async: its forwards so far
  int64_t completed = 0;          // stage 1: micro-batches whose backward finished
  bool waiting_forward = false;   // lockstep: its forward input for `tick` is missing
  bool waiting_backward = false;  // lockstep: its backward input for `tick` is missing
  int64_t backwards = 0;          // backwards it ran in the phase
  int64_t evals = 0;              // evaluation batches of the phase it passed on
};

/// A stage's latest window of optimizer steps (per-step metrics, output.metrics_every_steps):
/// sent every N steps of its own.
struct window_report {
  int32_t stage = -1;
  int32_t generation = 0;
  int64_t optimizer_steps = 0;
  double staleness_mean = 0;
  double inversion_error_mean = -1;  // −1 = none
  int64_t ended_by = -1;             // the id of the micro-batch whose backward ended the window
};

/// A stage's measurements of one epoch: sent when it finished the backward of the epoch's last
/// micro-batch (its record then starts afresh).
struct stage_epoch_report {
  int32_t epoch = 0;
  int32_t generation = 0;
  stage_report report;
};

/// The loss actor's training totals of one epoch: sent when it scored the epoch's last micro-batch.
struct epoch_loss_report {
  int32_t epoch = 0;
  loss_report totals;
};

/// The loss actor's evaluation of one epoch's wave: sent when it scored the wave's last batch.
struct eval_report {
  int32_t epoch = 0;
  double loss_sum = 0;  // Σ over samples
  int64_t correct = 0;
  int64_t samples = 0;
};

/// End of a stage's phase: its last tick ran (lockstep) or every micro-batch passed its backward (async).
struct phase_done {
  int32_t stage = -1;
  int32_t generation = 0;
};

/// To a node: build stage `stage` (from 0) of the run whose resolved config this is, with
/// `steps_per_epoch` optimizer steps per epoch (its learning-rate schedule); the answer is the stage.
struct spawn_stage {
  std::string config_yaml;
  int32_t stage = 0;
  int64_t steps_per_epoch = 0;
};

/// To a node (fault injection, faults.kill_node): the whole process is killed after `seconds`.
struct kill_node {
  double seconds = 0;
};

}  // namespace petra::messages

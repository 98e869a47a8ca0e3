// A consistent cut of a running pipeline (docs/design.md §4): in lockstep every stage about to run the
// same tick, its whole state, what it holds for the micro-batches in flight, and the messages
// addressed to it for that tick (sent before the cut, received after it); in async each stage as
// the cut's marker reached it, with its queues and the messages recorded on its links. Resuming
// from it continues the schedule exactly where it stood. Tensors are host copies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compute/pipeline/stage_state.hpp"
#include "training/simulator.hpp"

namespace petra {

/// A forward message in flight across the cut (id -1: none).
struct cut_forward {
  int64_t id = -1;
  activation x;
};

/// A backward message in flight across the cut (id -1: none).
struct cut_backward {
  int64_t id = -1;
  activation rebuilt, grad;
};

/// A forward message a stage held in its queue (async): a training micro-batch (id ≥ 0) or an
/// evaluation batch (eval.index ≥ 0; its labels stay empty: the loss side holds them).
struct cut_queued {
  int64_t id = -1;
  activation x;
  eval_item eval;
};

/// The async protocol's part of a stage's cut (docs/design.md §4, Chandy–Lamport): what the stage held
/// when the marker reached it on its forward link, and the messages it recorded on its backward
/// link (and, at the last stage, from the loss actor) until the marker came back on that link.
struct async_cut {
  bool present = false;
  int64_t forwards_done = 0;            // training forwards this stage ran in the phase before the cut
  int64_t backwards_done = 0;           // its backwards
  int64_t evals_done = 0;               // evaluation batches it passed on
  std::vector<cut_queued> forwards;     // queued, not run yet, in arrival order
  std::vector<cut_backward> backwards;  // queued or recorded, not run yet
  cut_backward loss;                    // last stage: its output awaiting the loss (rebuilt) and the
                                        // loss actor's answer (grad.x1); id −1: none
};

/// One stage's part of a cut.
struct stage_cut {
  stage_snapshot state;      // weights, momentum, BN buffers, optimizer steps
  stage::inflight inflight;  // kept inputs, weight stash, accumulated gradients
  cut_forward forward;       // its forward input for the cut's tick
  cut_backward backward;     // its backward input for the cut's tick
  eval_item eval;            // its evaluation batch for the cut's tick (index -1: none)
  async_cut async;           // async: the queues and recorded messages instead of the three above
};

/// Every stage's part, and what the loss side holds: the labels of the micro-batches that entered
/// and are not scored yet, and the phase's totals up to the cut.
struct pipeline_cut {
  int64_t tick = -1;  // counted from the phase's start: every stage is about to run it
  std::vector<stage_cut> stages;
  std::map<int64_t, std::vector<int32_t>> labels;
  run_totals totals;
  int64_t in_flight = 0;  // training micro-batches not back at stage 1, evaluation batches not scored
  int64_t completed = 0;  // of the phase, backward finished at stage 1 before the cut
  std::string driver;     // what the runtime driving the pipeline keeps of its own (opaque here)
};

/// The cut without its parts: tick, totals, in flight, completed and the driver's record, no stage
/// parts and no labels (what a runtime reads of a cut once every stage has its part back).
pipeline_cut counts_only(const pipeline_cut& cut);

/// A stage's part of a cut: its state and in-flight record (host copies); the messages are the
/// caller's to fill.
stage_cut cut_stage(stage& s, backend& be);

/// Restores a stage from its part of a cut (state and in-flight record).
void restore_stage_cut(stage& s, backend& be, const stage_cut& from);

/// Async: a cut's counts from stage 1's part and the evaluation batches the loss side had scored:
/// completed (backwards stage 1 finished in the phase) and in flight (messages the loader sent
/// before the marker, training or evaluation, whose credit had not come back). Throws
/// std::runtime_error when stage 1's part is not an async one.
void count_async_cut(pipeline_cut& cut, int64_t eval_scored);

}  // namespace petra

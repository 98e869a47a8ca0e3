// A consistent cut of a running pipeline (DESIGN.md §4): every stage about to run the same tick,
// its whole state, what it holds for the micro-batches in flight, and the messages addressed to it
// for that tick (sent before the cut, received after it). Resuming from it continues the schedule
// exactly where it stood. Tensors are host copies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compute/pipeline/simulator.hpp"
#include "compute/pipeline/stage_state.hpp"

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

/// One stage's part of a cut.
struct stage_cut {
  stage_snapshot state;      // weights, momentum, BN buffers, optimizer steps
  stage::inflight inflight;  // kept inputs, weight stash, accumulated gradients
  cut_forward forward;       // its forward input for the cut's tick
  cut_backward backward;     // its backward input for the cut's tick
  eval_item eval;            // its evaluation batch for the cut's tick (index -1: none)
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

/// A stage's part of a cut: its state and in-flight record (host copies); the messages are the
/// caller's to fill.
stage_cut cut_stage(stage& s, backend& be);

/// Restores a stage from its part of a cut (state and in-flight record).
void restore_stage_cut(stage& s, backend& be, const stage_cut& from);

}  // namespace petra

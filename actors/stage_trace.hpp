// A stage actor's timeline (output.trace, private to actors/): its track, the spans of its work,
// the message flows between stages and its waits for input, over the stage's shared state.
#pragma once

#include <chrono>
#include <cstdint>

#include "compute/pipeline/stage.hpp"
#include "training/trace_recorder.hpp"

namespace petra::detail {

struct stage_core;
using clock_type = std::chrono::steady_clock;

/// What the timeline keeps of a stage between two events.
struct stage_timeline {
  training::trace_track track;           // this stage's track (empty when not tracing)
  bool idle = false;                     // nothing to compute since idle_since, waiting for...
  bool waits_for_input = true;           // ...input (else a gradient: stage_report's wait_*_seconds)
  clock_type::time_point idle_since;     // the wait began (the timeline's span)
  clock_type::time_point counted_until;  // its time up to here is in the stage's wait time
  int64_t last_micro_batch = 0;          // what the timeline attributes a wait to
};

/// A phase starts: the stage's track, made once (when the process traces), and no wait open.
void open_timeline(stage_core& c);

/// The forward of micro-batch `id` ran over [begin, end]: its span, the flow in from the stage
/// before (or the loader) and out to the next, and the FIFO's depth.
void trace_forward(stage_core& c, int64_t id, clock_type::time_point begin, clock_type::time_point end);
/// The backward of micro-batch `id` ran over [begin, end] (with `r`'s optimizer step inside):
/// its spans, the flow in from the stage after (or the loss actor) and out to the one before.
void trace_backward(stage_core& c, const stage::backward_result& r, int64_t id, clock_type::time_point begin,
                    clock_type::time_point end);
/// An evaluation batch ran over [begin, end].
void trace_evaluate(stage_core& c, int64_t index, clock_type::time_point begin, clock_type::time_point end);
/// A hand-over of micro-batch `id` to another device began at `begin` and ends now.
void trace_hand_over(stage_core& c, int64_t id, clock_type::time_point begin);

/// The stage has nothing to run: a wait starts (once), for input when `for_input`, else for a
/// gradient (its next backward's, the loss's, or one that frees its window); the timeline shows it.
void mark_idle(stage_core& c, bool for_input);
/// Work begins at `now`: a wait, if one was open, ends there and counts in the stage's wait time.
void end_idle(stage_core& c, clock_type::time_point now);
/// The stage's record of the epoch ends at `now`: an open wait counts up to there, and goes on.
void split_idle(stage_core& c, clock_type::time_point now);
/// Mailbox depth on the timeline.
void trace_mailbox(stage_core& c, std::size_t waiting);

}  // namespace petra::detail

// A stage's timeline (output.trace) and its wait accounting: its track, the spans of its work, the
// message flows between stages, and the time it waits for input or for a gradient. Owned by the
// stage (an actor or a simulated stage), apart from what moves the messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "training/trace_recorder.hpp"

namespace petra::training {

class stage_timeline {
 public:
  using time_point = trace_clock::time_point;

  /// What an optimizer step inside a backward looked like, for its span.
  struct step_span {
    bool stepped = false;
    time_point begin{}, end{};
    int64_t version = 0;  // the weights' version after it
  };

  /// A phase starts at stage `index` (0-based): its track on `recorder`'s timeline (made once, as
  /// `process`'s "stage index+1"; null: not traced), and no wait open.
  void open(const std::shared_ptr<trace_recorder>& recorder, const std::string& process, int32_t index);

  /// The forward of micro-batch `id` ran over [begin, end] at the stage's tick `tick`, leaving `fifo`
  /// micro-batches awaiting their backward: its span, the flow in from the stage before (or the
  /// loader) and out to the next, and the FIFO's depth. An open wait ends at `begin`.
  void forward(int64_t id, time_point begin, time_point end, int64_t tick, std::size_t fifo);
  /// The backward of micro-batch `id` ran over [begin, end], `staleness` weight versions after its
  /// forward, with `step` inside it: its spans, the flow in from the stage after (or the loss actor)
  /// and out to the one before. An open wait ends at `begin`.
  void backward(int64_t id, time_point begin, time_point end, int64_t staleness, const step_span& step,
                std::size_t fifo);
  /// An evaluation batch ran over [begin, end].
  void evaluate(int64_t index, time_point begin, time_point end);
  /// A hand-over of micro-batch `id` to another device ran over [begin, end].
  void hand_over(int64_t id, time_point begin, time_point end);

  /// The stage has nothing to run from `now`: a wait starts (once), for input when `for_input`, else
  /// for a gradient (its next backward's, the loss's, or one that frees its window).
  void mark_idle(bool for_input, time_point now);
  /// Work begins at `now`: a wait, if one was open, ends there and counts in the wait time.
  void end_idle(time_point now);
  /// The record of the epoch ends at `now`: an open wait counts up to there, and goes on.
  void split_idle(time_point now);
  /// Mailbox depth on the timeline.
  void mailbox(std::size_t waiting, time_point now);

  /// Seconds waited for input and for a gradient since the counters were last set.
  double wait_input_seconds = 0;
  double wait_gradient_seconds = 0;

 private:
  trace_recorder* tracer(int64_t id) const;

  std::shared_ptr<trace_recorder> recorder_;
  trace_track track_;             // this stage's track (empty when not tracing)
  int32_t index_ = 0;             // the stage (0-based)
  bool idle_ = false;             // nothing to compute since idle_since_, waiting for...
  bool waits_for_input_ = true;   // ...input (else a gradient)
  time_point idle_since_{};       // the wait began (its span)
  time_point counted_until_{};    // its time up to here is in the wait time
  int64_t last_micro_batch_ = 0;  // what a wait and an evaluation are attributed to
};

}  // namespace petra::training

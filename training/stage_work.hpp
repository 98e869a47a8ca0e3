// A stage's own work as its actor runs it, with no actor system: the forward, backward and
// evaluation of its micro-batches, timed (the busy clock and the timeline's spans) and slowed down
// as faults.slow asks; the hand-over of activations across devices (docs/design.md §5); the rebuilds
// of outputs sent ahead of their gradients (PaReprop across stages); and the measurements its
// reports carry. The stage actors (actors/stage_*) decide what runs when and send what this returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "compute/backend.hpp"
#include "compute/pipeline/stage.hpp"
#include "compute/pipeline/stage_report.hpp"
#include "training/outputs_ahead.hpp"
#include "training/stage_record.hpp"
#include "training/stage_timeline.hpp"
#include "training/stage_window.hpp"
#include "training/trace_recorder.hpp"

namespace petra::training {

class stage_work {
 public:
  using clock = std::chrono::steady_clock;

  stage_work() = default;
  stage_work(std::shared_ptr<backend> device, std::shared_ptr<stage> compute)
      : device_(std::move(device)), compute_(std::move(compute)) {}

  /// A phase starts: its measurements from zero, the timeline opened (`recorder` null: none kept)
  /// for stage `index` of `process`, no rebuild ahead kept.
  void begin_phase(const std::shared_ptr<trace_recorder>& recorder, const std::string& process,
                   int32_t index);

  /// Runs `f`, one computation of the stage's, counted as busy time; then, when `slow` > 1
  /// (faults.slow), waits (slow − 1) times as long as it took (true in `slowed`). [begin, end] is
  /// when it ran, the wait included. Every timed step of every stage behaviour runs through here.
  template <class F>
  auto timed(double slow, bool& slowed, clock::time_point& begin, clock::time_point& end, F&& f) {
    begin = clock::now();
    auto out = f();
    slowed = slow_down(slow, begin);
    end = clock::now();
    record.add_busy(std::chrono::duration<double>(end - begin).count());
    return out;
  }

  /// The forward of micro-batch `id` at `tick`, timed and traced.
  activation forward(const activation& x, int64_t id, int64_t tick, double slow, bool& slowed);
  /// The backward of micro-batch `id` at `tick`, timed and traced; `input_ready` as stage::backward's.
  stage::backward_result backward(const activation& rebuilt, const activation& grad, int64_t id, int64_t tick,
                                  double slow, bool& slowed,
                                  const std::function<void(const activation&)>& input_ready = {});
  /// An evaluation batch (running BN statistics, the weights the stage has now), timed; `index` names
  /// it on the timeline.
  activation evaluate(const activation& x, int64_t index);

  /// The timeline's spans of a forward and a backward the caller timed itself.
  void trace_forward(int64_t id, clock::time_point begin, clock::time_point end, int64_t tick);
  void trace_backward(const stage::backward_result& r, int64_t id, clock::time_point begin,
                      clock::time_point end);

  /// The hand-over, the one place a stage crosses a device boundary: an activation that came in, as
  /// this stage's device can use it (an event wait, or a copy)...
  activation take_in(const activation& x) const;
  /// ...the same as host copies, for a cut (`a` is replaced by what take_in made of it: used once)...
  activation on_host(activation& a) const;
  /// ...and one of this stage's own, made ready for a consumer computing on `consumer` (the host for
  /// the loss actor, the coordinator, and any stage in another process); `id` is its micro-batch.
  activation hand_out(const activation& x, const device& consumer, int64_t id);

  /// Keeps micro-batch `id`'s rebuilt output, sent ahead of its gradient by the stage after, and
  /// starts its rebuild when its backward is the stage's next.
  void keep_ahead(int64_t id, activation rebuilt);
  /// Starts the rebuild of an output kept ahead once its backward is next (after each backward).
  void rebuild_ahead();

  /// The stage's report of the phase so far; `fault_events` it sent to the coordinator.
  stage_report report(int64_t fault_events);
  /// The report of the epoch that just ended; the next epoch's measurements start afresh.
  stage_report take_epoch_report(int64_t fault_events);
  /// A new cut of the model: the record of the running epoch that the stage at this place kept
  /// goes on here (counts, peaks, busy time, upstream traffic, its clock). The per-step window
  /// starts now.
  void continue_record(const stage_report& earlier);

  stage& compute() const { return *compute_; }

  stage_record record;        // the epoch's measurements for the stage's report
  stage_timeline timeline;    // its spans (output.trace) and the epoch's wait times
  stage_window_meter window;  // per-step metrics
  outputs_ahead ahead;        // rebuilt outputs sent ahead of their gradients, for backwards not next yet

 private:
  bool slow_down(double slow, clock::time_point begin) const;

  std::shared_ptr<backend> device_;
  std::shared_ptr<stage> compute_;
};

}  // namespace petra::training

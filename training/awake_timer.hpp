// A timeout that counts only the time its process was awake to wait. A wait for the pipeline's
// progress (faults.stall_seconds) is one wall-clock timer; when the whole process is stopped
// (SIGSTOP, a paused virtual machine, a debugger) or starved of the CPU for longer than the limit,
// that timer has expired when the process runs again, although no stage could make progress
// either: the run would declare a stall and roll back for nothing. So the wait goes in slices of
// at most one second, and a slice that took far longer than asked counts as twice its length at
// most: a frozen process wakes up with at most two seconds more counted, and has the rest of the
// limit to see its stages move again. A real loss still ends the wait after the limit plus at
// most one slice.
#pragma once

#include <algorithm>
#include <chrono>

namespace petra {

class awake_timer {
 public:
  using duration = std::chrono::duration<double>;

  explicit awake_timer(duration limit, duration slice = std::chrono::seconds(1))
      : limit_(limit), slice_(slice) {}

  /// The next wait: one slice, or what is left of the limit.
  duration next_slice() const { return std::max(duration::zero(), std::min(slice_, limit_ - counted_)); }

  /// Records a wait of `asked` that ended by its timeout after `actual` (steady clock); returns
  /// whether the limit is reached.
  bool timed_out_after(duration asked, duration actual) {
    counted_ += std::min(actual, 2 * asked);
    return expired();
  }

  bool expired() const { return counted_ >= limit_; }
  duration counted() const { return counted_; }

 private:
  duration limit_;
  duration slice_;
  duration counted_{0};
};

}  // namespace petra

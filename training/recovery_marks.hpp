// What a stage keeps of the stage-local recoveries of its phase (docs/design.md §6): the
// micro-batches lost with the rebuilt stages, forgotten here until the loader sends them again, and
// what a rebuilt stage's neighbours hold of its messages.
#pragma once

#include <cstdint>
#include <map>
#include <set>

namespace petra {

/// What a stage keeps of the recoveries of its phase.
struct recovery_marks {
  bool held = false;                  // (kept across a plan: a rebuilt stage is held before it gets one)
  int64_t drop_upto = -1;             // every micro-batch up to this one (stages after the lost ones)
  std::set<int64_t> cancelled;        // these (stages before the lost ones)
  int64_t abandoned_cuts = -1;        // cuts up to this tick were given up (async: their markers are ignored)
  int64_t quiet_forward_below = -1;   // lockstep, a rebuilt stage: its neighbours hold its messages for
  int64_t quiet_backward_below = -1;  // ticks before these (or ran them): not sent again
  std::set<int64_t> coming_again;     // lost, re-issued by the loader, their new forward not here yet
  std::set<int64_t> readmitted;       // lost, then re-issued and taken in again: not forgotten
  // Lockstep: the tick at which a re-issued micro-batch enters stage 1; a forward of it for an earlier
  // tick is a late message of the lost stages, not its re-issue.
  std::map<int64_t, int64_t> reissue_tick;

  /// A micro-batch lost in a recovery of this phase (and not taken in again since).
  bool forgotten(int64_t id) const {
    return id >= 0 && readmitted.count(id) == 0 && (id <= drop_upto || cancelled.count(id) > 0);
  }
  /// The forward of a forgotten micro-batch came: true when it is its re-issue (taken in from now on).
  bool readmit(int64_t id);
  /// A new phase: nothing forgotten (a hold stays).
  void restart();
};

}  // namespace petra

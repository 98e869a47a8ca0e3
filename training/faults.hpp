// What went wrong in a run, as the trainer loop sees it: the injected faults a runtime counted,
// and a failure of the run with its kind (never classified by the text of a message).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace petra {

/// Injected faults of one stage (docs/design.md §6) and what the receivers did about them.
struct fault_counts {
  int64_t drops = 0;
  int64_t duplicates = 0;
  int64_t reorders = 0;
  int64_t delays = 0;  // messages sent late (a link delay, jitter)
  int64_t slowed = 0;  // computations slowed down (faults.slow)
  int64_t crashes = 0;
  int64_t kills = 0;  // node processes killed (faults.kill_node), counted at the first stage they held
  int64_t duplicates_discarded = 0;  // receiver side: copies and late messages dropped

  int64_t injected() const { return drops + duplicates + reorders + delays + slowed + crashes + kills; }
  fault_counts& operator+=(const fault_counts& o);
};

enum class failure_kind {
  injected_crash,   // faults.crash_at_tick fired
  stage_exception,  // a stage threw while computing
  lost_actor,       // an actor ended (its node died, or it quit)
  stall,            // no progress for faults.stall_seconds: a lost message or a hung stage
  unreachable,      // a node could not be reached
  bad_reply,        // a control request failed or timed out
};

/// "injected crash", "stage exception", ...
std::string to_string(failure_kind kind);

/// A failure of the running attempt of a phase. stage is 0-based, -1 = none in particular; the
/// faults injected and the micro-batches completed before it are kept for the run's accounting.
class run_failure : public std::runtime_error {
 public:
  run_failure(failure_kind kind, int32_t stage, int64_t tick, const std::string& what);
  failure_kind kind() const { return kind_; }
  int32_t stage() const { return stage_; }
  int64_t tick() const { return tick_; }
  std::vector<fault_counts> faults;  // per stage, in the failed attempt
  int64_t completed = 0;  // micro-batches whose backward finished at stage 1 before it (-1: unknown)
  std::string not_local;  // why the runtime could not rebuild only the lost stages ("" = not tried)

 private:
  failure_kind kind_;
  int32_t stage_;
  int64_t tick_;
};

/// A uniform draw in [0, 1) for a fault at stage `stage` (0-based) on micro-batch `id` (`salt` tells
/// the faults apart): a function of faults.seed and the keys alone, so a run injects the same faults
/// whenever the messages arrive (forward gradients' derivatives, which come from the loss actor).
double fault_draw(uint64_t seed, int32_t stage, int64_t id, uint64_t salt);

}  // namespace petra

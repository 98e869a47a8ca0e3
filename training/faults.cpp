// Fault counts and run failures.
#include "training/faults.hpp"

namespace petra {

fault_counts& fault_counts::operator+=(const fault_counts& o) {
  drops += o.drops;
  duplicates += o.duplicates;
  reorders += o.reorders;
  delays += o.delays;
  slowed += o.slowed;
  crashes += o.crashes;
  kills += o.kills;
  duplicates_discarded += o.duplicates_discarded;
  return *this;
}

std::string to_string(failure_kind kind) {
  switch (kind) {
    case failure_kind::injected_crash:
      return "injected crash";
    case failure_kind::stage_exception:
      return "stage exception";
    case failure_kind::lost_actor:
      return "lost actor";
    case failure_kind::stall:
      return "stall";
    case failure_kind::unreachable:
      return "unreachable node";
    case failure_kind::bad_reply:
      return "bad reply";
  }
  return "?";
}

namespace {

std::string describe(int32_t stage, int64_t tick, const std::string& what) {
  if (stage < 0) return what;
  return "stage " + std::to_string(stage + 1) + (tick >= 0 ? " at tick " + std::to_string(tick) : "") + ": " +
         what;
}

}  // namespace

run_failure::run_failure(failure_kind kind, int32_t stage, int64_t tick, const std::string& what)
    : std::runtime_error(describe(stage, tick, what)), kind_(kind), stage_(stage), tick_(tick) {}

}  // namespace petra

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

double fault_draw(uint64_t seed, int32_t stage, int64_t id, uint64_t salt) {
  // splitmix64's finaliser over the three keys: independent draws per stage, micro-batch and fault.
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + (static_cast<uint64_t>(stage) << 40) +
               static_cast<uint64_t>(id) * 0xD1B54A32D192ED03ULL + salt * 0x8CB92BA72F3D8DD7ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

}  // namespace petra

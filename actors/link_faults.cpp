// Fault injection at a stage actor.
#include "actors/link_faults.hpp"

namespace petra::detail {
namespace {

/// An exception that is an injected crash (faults.crash_at_tick), told apart by its type.
struct injected_crash : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

void arm_faults(stage_core& c, const stage_faults& f) {
  c.faults = f;
  c.fault_rng.seed(f.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(c.ctx.index));
}

void maybe_crash(stage_core& c) {
  if (c.faults_on() && c.faults.crash_at_tick >= 0 && c.phase.tick == c.faults.crash_at_tick)
    throw injected_crash("injected crash (faults.crash_at_tick)");
}

caf::error error_of(const std::exception& e) {
  const bool crash = dynamic_cast<const injected_crash*>(&e) != nullptr;
  return caf::make_error(crash ? petra_errc::injected_crash : petra_errc::stage_exception, e.what());
}

bool in_drop_burst(stage_core& c) {
  const stage_faults& f = c.faults;
  if (f.drop_burst_at_tick < 0 || c.phase.tick < f.drop_burst_at_tick || c.burst_dropped >= f.drop_burst)
    return false;
  ++c.burst_dropped;
  return true;
}

int64_t arrival_tick(const stage_core& c, int64_t t, int64_t link_delay) {
  return t + 1 + (c.faults_on() ? link_delay : 0);
}

}  // namespace petra::detail

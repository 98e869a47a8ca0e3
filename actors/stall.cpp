// Diagnosing a stall: the stages asked where they stand.
#include "actors/stall.hpp"

#include <string>

#include "training/stall_diagnosis.hpp"

namespace petra {

using namespace messages;
using namespace atoms;

run_failure diagnose_stall(control_channel& control, const std::vector<stage_actor>& stages, bool lockstep,
                           int stall_seconds, bool forward_gradient) {
  std::vector<stage_status> status;
  try {
    status = control.gather<stage_status>(stages, std::chrono::seconds(10), status_atom_v);
  } catch (const run_failure& e) {
    return run_failure(failure_kind::stall, e.stage(), -1,
                       "no progress for " + stall_limit(stall_seconds) + "; " + e.what());
  }
  std::vector<stage_standing> standing;
  for (const stage_status& s : status)
    standing.push_back({s.stage, s.in_phase, s.tick, s.waiting_forward, s.waiting_backward});
  return diagnose_stall(standing, lockstep, stall_seconds, forward_gradient);
}

}  // namespace petra

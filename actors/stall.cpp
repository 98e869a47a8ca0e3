// Diagnosing a stall.
#include "actors/stall.hpp"

#include <string>

namespace petra {

using namespace messages;
using namespace atoms;

run_failure diagnose_stall(control_channel& control, const std::vector<stage_actor>& stages, bool lockstep,
                           int stall_seconds) {
  const std::string limit = std::to_string(stall_seconds) + " s (faults.stall_seconds)";
  std::vector<stage_status> status;
  try {
    status = control.gather<stage_status>(stages, std::chrono::seconds(10), status_atom_v);
  } catch (const run_failure& e) {
    return run_failure(failure_kind::stall, e.stage(), -1, "no progress for " + limit + "; " + e.what());
  }
  for (std::size_t j = 0; j < status.size(); ++j) {
    const stage_status& s = status[j];
    const auto stage = static_cast<int32_t>(j);
    if (lockstep && s.waiting_forward && j > 0 && status[j - 1].tick >= s.tick)
      return run_failure(failure_kind::stall, stage, s.tick,
                         "no progress for " + limit + ": its forward input of tick " +
                             std::to_string(s.tick) + " never came although stage " + std::to_string(j) +
                             " is at tick " + std::to_string(status[j - 1].tick) + ": lost on the link " +
                             std::to_string(j) + " -> " + std::to_string(j + 1));
    if (lockstep && s.waiting_backward && j + 1 < status.size() && status[j + 1].tick >= s.tick)
      return run_failure(failure_kind::stall, stage, s.tick,
                         "no progress for " + limit + ": its backward input of tick " +
                             std::to_string(s.tick) + " never came although stage " + std::to_string(j + 2) +
                             " is at tick " + std::to_string(status[j + 1].tick) + ": lost on the link " +
                             std::to_string(j + 2) + " -> " + std::to_string(j + 1));
  }
  if (!lockstep)
    for (std::size_t j = status.size(); j-- > 0;)
      if (status[j].waiting_backward)
        return run_failure(failure_kind::stall, static_cast<int32_t>(j), -1,
                           "no progress for " + limit +
                               ": it waits for the backward of its oldest micro-batch: "
                               "a message between stage " +
                               std::to_string(j + 1) + " and stage " + std::to_string(j + 2) + " was lost");
  std::string where;
  for (const stage_status& s : status)
    where += (where.empty() ? "" : ", ") + std::string("stage ") + std::to_string(s.stage + 1) +
             (s.in_phase ? " at tick " + std::to_string(s.tick) : " done");
  return run_failure(failure_kind::stall, -1, -1,
                     "no progress for " + limit + " and no stage is waiting for a lost message (" + where +
                         "): a stage hangs");
}

}  // namespace petra

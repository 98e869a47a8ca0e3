// Diagnosing a stall.
#include "training/stall_diagnosis.hpp"

#include <optional>
#include <string>

namespace petra {

namespace {

/// Lockstep: stage j waits for a forward input its predecessor has sent (it is past that tick).
bool forward_lost(const std::vector<stage_standing>& status, std::size_t j) {
  return j > 0 && status[j].waiting_forward && status[j - 1].tick >= status[j].tick;
}

run_failure forward_lost_failure(const std::vector<stage_standing>& status, std::size_t j,
                                 const std::string& limit) {
  const stage_standing& s = status[j];
  return run_failure(failure_kind::stall, static_cast<int32_t>(j), s.tick,
                     "no progress for " + limit + ": its forward input of tick " + std::to_string(s.tick) +
                         " never came although stage " + std::to_string(j) + " is at tick " +
                         std::to_string(status[j - 1].tick) + ": lost on the link " + std::to_string(j) +
                         " -> " + std::to_string(j + 1));
}

/// Forward gradients: a stage waits for its forward input (lost on the link into it, as for PETRA:
/// named first, since every stage upstream then waits for derivatives too) or for derivatives, which
/// the loss actor sends; in lockstep the one waiting for the earliest tick lost them (the others wait
/// for derivatives of later micro-batches, which the stall holds up).
std::optional<run_failure> diagnose_forward_gradient(const std::vector<stage_standing>& status, bool lockstep,
                                                     const std::string& limit) {
  for (std::size_t j = 1; lockstep && j < status.size(); ++j)
    if (forward_lost(status, j)) return forward_lost_failure(status, j, limit);
  // Lockstep: the earliest tick waiting; async: the highest stage waiting (every stage upstream of a
  // lost micro-batch waits for its derivatives).
  const stage_standing* lost = nullptr;
  for (const stage_standing& s : status)
    if (s.waiting_backward && (!lost || !lockstep || s.tick < lost->tick)) lost = &s;
  if (!lost) return std::nullopt;
  const std::string stage = "stage " + std::to_string(lost->stage + 1);
  if (lockstep)
    return run_failure(failure_kind::stall, lost->stage, lost->tick,
                       "no progress for " + limit + ": its derivatives (forward gradients) for tick " +
                           std::to_string(lost->tick) + " never came although the last stage is at tick " +
                           std::to_string(status.back().tick) +
                           ": lost on their way back from the loss actor to " + stage);
  return run_failure(failure_kind::stall, lost->stage, -1,
                     "no progress for " + limit +
                         ": it waits for the derivatives (forward gradients) of its oldest micro-batch: that "
                         "micro-batch was lost on its way from " +
                         stage + " to the loss actor, or its derivatives on their way back");
}

}  // namespace

std::string stall_limit(int stall_seconds) {
  return std::to_string(stall_seconds) + " s (faults.stall_seconds)";
}

run_failure diagnose_stall(const std::vector<stage_standing>& status, bool lockstep, int stall_seconds,
                           bool forward_gradient) {
  const std::string limit = stall_limit(stall_seconds);
  if (forward_gradient)
    if (auto lost = diagnose_forward_gradient(status, lockstep, limit)) return *lost;
  for (std::size_t j = 0; j < status.size(); ++j) {
    const stage_standing& s = status[j];
    const auto stage = static_cast<int32_t>(j);
    if (lockstep && forward_lost(status, j)) return forward_lost_failure(status, j, limit);
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
  for (const stage_standing& s : status)
    where += (where.empty() ? "" : ", ") + std::string("stage ") + std::to_string(s.stage + 1) +
             (s.in_phase ? " at tick " + std::to_string(s.tick) : " done");
  return run_failure(failure_kind::stall, -1, -1,
                     "no progress for " + limit + " and no stage is waiting for a lost message (" + where +
                         "): a stage hangs");
}

}  // namespace petra

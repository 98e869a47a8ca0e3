// Where a message that reaches a stage stands against the stage's phase and wiring: the first step of
// every stage handler (admit → compute → emit), a plain decision with no actor system.
#pragma once

#include <cstdint>

namespace petra::training {

/// For a phase not planned here yet (a neighbour started first: it waits), a late copy of an earlier
/// or finished phase (discarded, counted), for now; or from a neighbour of an older generation than
/// the one wired (a stage declared lost that woke up: fenced, dropped and counted).
enum class arrival { early, stale, current, fenced };

/// What a stage knows to sort a message by: its place, the generations of the neighbours it is
/// wired to, and its phase.
struct arrival_context {
  int32_t index = 0;
  int32_t prev_generation = 0, next_generation = 0;
  int64_t phase = 0;
  bool in_phase = false;
};

/// A message stamped by stage `sender` of generation `generation` for phase `phase`.
inline arrival classify_arrival(const arrival_context& here, int32_t sender, int32_t generation,
                                int64_t phase) {
  // Generations only grow: a newer one is a rebuilt neighbour whose wiring is on its way here.
  if ((sender == here.index - 1 && generation < here.prev_generation) ||
      (sender == here.index + 1 && generation < here.next_generation))
    return arrival::fenced;
  if (phase > here.phase) return arrival::early;
  if (phase < here.phase || !here.in_phase) return arrival::stale;
  return arrival::current;
}

}  // namespace petra::training

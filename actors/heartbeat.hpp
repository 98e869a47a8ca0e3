// Heartbeats between the coordinator and its `petra node`s (runtime.heartbeat_timeout): a node that
// hangs (alive, its socket open, silent: SIGSTOP, a frozen host) closes no connection, so nothing but
// its silence tells. A detached actor asks every node for a heartbeat each interval and declares a
// node lost when none came back for the timeout; the node is told to stop (when it wakes up).
#pragma once

#include <caf/actor_system.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "messages/interfaces.hpp"

namespace petra {

/// Who is told what the heartbeats found: `lost` once per node silent for `silent_s` seconds (≥ the
/// timeout), `late` for every heartbeat answer that comes from a node after it was declared lost.
struct heartbeat_verdicts {
  std::function<void(const std::string& where, const caf::actor_addr& node, double silent_s)> lost;
  std::function<void(const std::string& where)> late;
};

/// A node silent for `timeout` is declared lost; it is asked every timeout / 5. Silence counts from the
/// round whose request got the last answer, so a node is declared lost five or six rounds after it:
/// between `timeout` − one interval and `timeout` + one interval after it fell silent.
std::chrono::duration<double> heartbeat_interval(std::chrono::duration<double> timeout);

/// The monitor (detached: its thread waits for nobody's computation). Send it (watch_atom, where,
/// node as a caf::actor) for every node connected; a node declared lost stays lost.
caf::actor spawn_heartbeat_monitor(caf::actor_system& system, std::chrono::duration<double> timeout,
                                   heartbeat_verdicts verdicts);

}  // namespace petra

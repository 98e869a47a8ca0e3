// The coordinator as its pipeline sees it: a typed event-based actor that takes every phase end,
// failure, fault, progress report, epoch part and cut part, and the loss of every actor it monitors,
// and hands each on to the trainer thread as one message (event_atom, who sent it, the event), in
// the order it came. The trainer keeps the record of them (actors/coordinator_events.hpp).
#pragma once

#include <caf/all.hpp>

#include "messages/interfaces.hpp"

namespace petra {

/// The coordinator's own interface: its pipeline's (messages::coordinator_actor), and from the
/// trainer thread: monitor this actor (its loss ends the attempt while it is watched).
using coordinator_control =
    messages::coordinator_actor::extend<caf::reacts_to<atoms::watch_atom, caf::actor>>;

/// The coordinator, handing every event to `trainer` (the trainer thread's actor).
coordinator_control spawn_coordinator(caf::actor_system& system, caf::actor_addr trainer);

}  // namespace petra

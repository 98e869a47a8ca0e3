// The coordinator as its pipeline sees it: a typed event-based actor that takes every phase end,
// failure, fault, progress report, epoch part and cut part, and the loss of every actor it monitors,
// into its record (actors/coordinator_events.hpp) as they come, whatever the trainer thread is doing.
#pragma once

#include <caf/all.hpp>
#include <memory>

#include "actors/coordinator_events.hpp"
#include "messages/interfaces.hpp"

namespace petra {

/// The coordinator's own interface: its pipeline's (messages::coordinator_actor), and from the
/// trainer thread: monitor this actor (its loss ends the attempt while it is watched).
using coordinator_control =
    messages::coordinator_actor::extend<caf::reacts_to<atoms::watch_atom, caf::actor>>;

coordinator_control spawn_coordinator(caf::actor_system& system, std::shared_ptr<coordinator_events> events);

}  // namespace petra

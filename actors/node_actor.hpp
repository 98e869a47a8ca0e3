// The node actor: lives in a `petra node` process and builds, on request, one stage of the
// coordinator's model (from the coordinator's resolved config) as a stage actor of its own.
#pragma once

#include <caf/actor_system.hpp>
#include <functional>
#include <string>

#include "messages/interfaces.hpp"

namespace petra {

/// `name` is how the node's stages appear on a timeline ("node 127.0.0.1:7001"). Its stages are kept
/// per run (the coordinator process that asked for them). `on_fenced` is called when a coordinator
/// declared the node lost (it was silent) and told it to stop, once that run's stages are stopped
/// and no other run's remain: the process should end. A run whose coordinator is gone has its stages
/// stopped, and the node serves the next.
messages::node_actor spawn_node_actor(caf::actor_system& sys, std::string name,
                                      std::function<void()> on_fenced);

/// Splits "host:port"; throws std::invalid_argument naming the text otherwise.
std::pair<std::string, uint16_t> parse_host_port(const std::string& text);

/// True for 127.0.0.0/8, ::1 and localhost.
bool is_loopback(const std::string& host);

}  // namespace petra

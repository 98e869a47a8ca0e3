// Connections between a coordinator and its `petra node` processes: plain BASP over TCP on
// loopback, BASP over TLS (CAF's OpenSSL module) when TLS is configured.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <chrono>
#include <string>

#include "config/config.hpp"
#include "messages/interfaces.hpp"

namespace petra {

/// Connects to the node at "host:port": over TLS when `tls.enabled()` (the actor system must then
/// come from caf_config(threads, tls)), plain otherwise. Gives up after `timeout` (a TLS/plain
/// mismatch or a peer that never answers the handshake is an error, not a hang).
caf::expected<messages::node_actor> connect_node(
    caf::actor_system& sys, const std::string& host_port, const config::tls_config& tls,
    std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// Publishes `node` on host:port (port 0 = a free one) over TLS when `tls`, plain otherwise;
/// returns the bound port. Plain: every connection's first BASP header is checked before CAF sees
/// it (CAF 0.17.6 crashes on some); a bad one is dropped and logged on stderr.
caf::expected<uint16_t> publish_node(caf::actor_system& sys, const messages::node_actor& node,
                                     const std::string& host, uint16_t port, bool tls);

}  // namespace petra

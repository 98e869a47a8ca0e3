// Connections to and from `petra node` processes.
#include "actors/node_connection.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "actors/node_actor.hpp"

namespace petra {

caf::expected<messages::node_actor> connect_node(caf::actor_system& sys, const std::string& host_port,
                                                 const config::tls_config& tls,
                                                 std::chrono::milliseconds timeout) {
  std::string host;
  uint16_t port = 0;
  try {
    std::tie(host, port) = parse_host_port(host_port);
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::invalid_argument, e.what());
  }
  if (tls.enabled() && !sys.has_openssl_manager())
    return caf::make_error(caf::sec::runtime_error,
                           "TLS is configured but this actor system has no OpenSSL module: build it from "
                           "caf_config(threads, tls)");
  // The middleman's own remote_actor waits forever for the BASP handshake; asking its
  // connection actor directly bounds the wait.
  const caf::io::middleman_actor connector =
      tls.enabled() ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  caf::expected<messages::node_actor> result{caf::sec::runtime_error};
  caf::scoped_actor self{sys};
  self->request(connector, timeout, caf::connect_atom::value, host, port)
      .receive(
          [&](const caf::node_id&, caf::strong_actor_ptr& peer, std::set<std::string>& interface) {
            if (!peer)
              result = caf::make_error(caf::sec::no_actor_published_at_port, "nothing is published at " + host_port);
            else if (!sys.assignable(interface, sys.message_types<messages::node_actor>()))
              result = caf::make_error(caf::sec::unexpected_actor_messaging_interface,
                                       host_port + " is not a `petra node` of this build");
            else
              result = caf::actor_cast<messages::node_actor>(std::move(peer));
          },
          [&](caf::error& e) {
            if (e == caf::sec::request_timeout)
              result = caf::make_error(
                  caf::sec::cannot_connect_to_node,
                  "no handshake from " + host_port + " within " + std::to_string(timeout.count()) + " ms" +
                      (tls.enabled() ? " (is the node started with --tls-cert/--tls-key/--tls-ca of the same CA?)"
                                     : " (is the node using TLS? then set tls.cert, tls.key and tls.ca)"));
            else
              result = std::move(e);
          });
  return result;
}

caf::expected<uint16_t> publish_node(caf::actor_system& sys, const messages::node_actor& node,
                                     const std::string& host, uint16_t port, bool tls) {
  if (!tls) return sys.middleman().publish(node, port, host.c_str(), true);
  if (!sys.has_openssl_manager())
    return caf::make_error(caf::sec::runtime_error,
                           "TLS asked for but this actor system has no OpenSSL module: build it from "
                           "caf_config(threads, tls)");
  return caf::openssl::publish(node, port, host.c_str(), true);
}

}  // namespace petra

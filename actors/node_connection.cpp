// Connections to and from `petra node` processes.
#include "actors/node_connection.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/scribe_impl.hpp>
#include <caf/openssl/all.hpp>
#include <iostream>

#include "actors/node_actor.hpp"

namespace petra {
namespace {

// CAF 0.17.6 trusts the first BASP header of an accepted connection: a client handshake without
// payload crashes the process (a null payload is dereferenced), and a huge announced payload is
// allocated before a byte of it arrives. A plain node therefore checks that header itself and drops
// the connection (logging it) before BASP sees it. TLS nodes use CAF's OpenSSL acceptor unchanged:
// only peers with a certificate of the CA get that far.
constexpr std::size_t basp_header_size = 32;         // caf::io::basp::header_size
constexpr uint8_t basp_client_handshake = 0x01;      // caf::io::basp::message_type::client_handshake
constexpr uint32_t max_handshake_payload = 1 << 16;  // node id and application ids: a few hundred bytes

uint64_t big_endian(const unsigned char* bytes, int count) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i) value = value << 8 | bytes[i];
  return value;
}

/// What is wrong with the first header a client sent; "" when it is a plausible handshake.
std::string first_header_problem(const unsigned char* header) {
  const unsigned operation = header[0];
  const uint64_t payload = big_endian(header + 4, 4);
  if (operation != basp_client_handshake)
    return "its first message is not a BASP client handshake (operation " + std::to_string(operation) + ")";
  if (payload == 0 || payload > max_handshake_payload)
    return "its handshake announces " + std::to_string(payload) + " bytes of payload (1.." +
           std::to_string(max_handshake_payload) + " expected)";
  return "";
}

class guarded_scribe final : public caf::io::network::scribe_impl {
 public:
  guarded_scribe(caf::io::network::default_multiplexer& mpx, caf::io::network::native_socket fd)
      : scribe_impl(mpx, fd), peer_(addr() + ":" + std::to_string(port())) {}

  bool consume(caf::execution_unit* ctx, const void* bytes, size_t count) override {
    if (!checked_ && count >= basp_header_size) {
      checked_ = true;
      const std::string problem = first_header_problem(static_cast<const unsigned char*>(bytes));
      if (!problem.empty()) {
        std::cerr << "petra node: dropped the connection from " << peer_ << ": " << problem << "\n";
        dropped_ = true;
        io_failure(ctx, caf::io::network::operation::read);  // the broker forgets it; the socket closes
        return false;
      }
    }
    return scribe_impl::consume(ctx, bytes, count);
  }

  // Called when BASP itself closes the connection (a malformed message after the handshake) and at shutdown.
  void graceful_shutdown() override {
    if (!dropped_) std::cerr << "petra node: closed the connection from " << peer_ << "\n";
    scribe_impl::graceful_shutdown();
  }

 private:
  std::string peer_;
  bool checked_ = false;
  bool dropped_ = false;
};

class guarded_doorman final : public caf::io::network::doorman_impl {
 public:
  using doorman_impl::doorman_impl;

  bool new_connection() override {
    if (detached()) return false;  // closed while the multiplexer still had events for it
    auto& mpx = acceptor_.backend();
    caf::io::scribe_ptr scribe = caf::make_counted<guarded_scribe>(mpx, acceptor_.accepted_socket());
    const auto handle = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mpx, handle);
  }
};

/// CAF's connection actor, except that the acceptors it opens are guarded.
class guarded_middleman_actor final : public caf::io::middleman_actor_impl {
 public:
  using middleman_actor_impl::middleman_actor_impl;

 protected:
  caf::expected<caf::io::doorman_ptr> open(uint16_t port, const char* addr, bool reuse) override {
    auto fd = caf::io::network::new_tcp_acceptor_impl(port, addr, reuse);
    if (!fd) return std::move(fd.error());
    auto& mpx = static_cast<caf::io::network::default_multiplexer&>(system().middleman().backend());
    return caf::make_counted<guarded_doorman>(mpx, *fd);
  }
};

caf::expected<uint16_t> publish_guarded(caf::actor_system& sys, const messages::node_actor& node,
                                        const std::string& host, uint16_t port) {
  auto basp = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::io::middleman_actor publisher = sys.spawn<guarded_middleman_actor, caf::hidden>(std::move(basp));
  caf::expected<uint16_t> result{caf::sec::runtime_error};
  caf::scoped_actor self{sys};
  self->request(publisher, std::chrono::seconds(30), caf::publish_atom::value, port,
                caf::actor_cast<caf::strong_actor_ptr>(node), sys.message_types(node), host, true)
      .receive([&](uint16_t bound) { result = bound; }, [&](caf::error& e) { result = std::move(e); });
  self->send_exit(publisher, caf::exit_reason::user_shutdown);
  return result;
}

}  // namespace

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
              result = caf::make_error(caf::sec::no_actor_published_at_port,
                                       "nothing is published at " + host_port);
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
                      (tls.enabled()
                           ? " (is the node started with --tls-cert/--tls-key/--tls-ca of the same CA?)"
                           : " (is the node using TLS? then set tls.cert, tls.key and tls.ca)"));
            else
              result = std::move(e);
          });
  return result;
}

caf::expected<uint16_t> publish_node(caf::actor_system& sys, const messages::node_actor& node,
                                     const std::string& host, uint16_t port, bool tls) {
  if (!tls) return publish_guarded(sys, node, host, port);
  if (!sys.has_openssl_manager())
    return caf::make_error(caf::sec::runtime_error,
                           "TLS asked for but this actor system has no OpenSSL module: build it from "
                           "caf_config(threads, tls)");
  return caf::openssl::publish(node, port, host.c_str(), true);
}

}  // namespace petra

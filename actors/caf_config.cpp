// The actor system's configuration.
#include "actors/caf_config.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "messages/errors.hpp"
#include "messages/interfaces.hpp"

namespace petra {
namespace {

std::string openssl_error() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    text += text.empty() ? buf : std::string("; ") + buf;
  }
  return text;
}

// CAF loads these files lazily, inside its I/O thread, and throws there on a bad one; loading them
// here first turns that into an error at start-up that names the file.
void check_tls_pair(const config::tls_config& tls, const std::array<std::string, 3>& names) {
  using context = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;
  context with_cert(SSL_CTX_new(TLS_method()), SSL_CTX_free),
      key_only(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!with_cert || !key_only)
    throw std::runtime_error("cannot create an OpenSSL context: " + openssl_error());
  if (SSL_CTX_use_certificate_chain_file(with_cert.get(), tls.cert.c_str()) != 1)
    throw std::invalid_argument(names[0] + " " + tls.cert + " is not a PEM certificate: " + openssl_error());
  if (SSL_CTX_use_PrivateKey_file(key_only.get(), tls.key.c_str(), SSL_FILETYPE_PEM) != 1)
    throw std::invalid_argument(names[1] + " " + tls.key +
                                " is not a PEM private key (or needs a passphrase): " + openssl_error());
  if (SSL_CTX_use_PrivateKey_file(with_cert.get(), tls.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(with_cert.get()) != 1)
    throw std::invalid_argument(names[1] + " " + tls.key + " does not match the certificate " + tls.cert +
                                ": " + openssl_error());
  if (SSL_CTX_load_verify_locations(with_cert.get(), tls.ca.c_str(), nullptr) != 1)
    throw std::invalid_argument(names[2] + " " + tls.ca + " holds no PEM CA certificate: " + openssl_error());
}

}  // namespace

void check_tls_files(const config::tls_config& tls, const std::array<std::string, 3>& names) {
  if (!tls.enabled()) return;
  const std::array<const std::string*, 3> files{&tls.cert, &tls.key, &tls.ca};
  for (std::size_t i = 0; i < files.size(); ++i)
    if (files[i]->empty())
      throw std::invalid_argument(names[i] + " is missing: TLS needs " + names[0] + ", " + names[1] +
                                  " and " + names[2] + ", all three (or none, on loopback)");
  for (std::size_t i = 0; i < files.size(); ++i)
    if (!std::ifstream(*files[i]))
      throw std::invalid_argument(names[i] + " " + *files[i] + " does not exist or is not readable");
  check_tls_pair(tls, names);
}

caf_config::caf_config(int scheduler_threads) {
  add_message_types<caf::id_block::petra>();
  add_message_types<caf::id_block::petra_handles>();
  add_error_category(caf::atom("petra"), [](uint8_t code, caf::atom_value, const caf::message& context) {
    std::string text = "petra " + messages::to_string(static_cast<messages::petra_errc>(code));
    if (context.match_elements<std::string>()) text += ": " + context.get_as<std::string>(0);
    return text;
  });
  load<caf::io::middleman>();
  set("scheduler.max-threads", scheduler_threads);
  // CAF's default lets an actor keep its worker for as long as its mailbox holds messages, and the
  // actors its messages wake queue behind it on that worker: a busy async stage (its mailbox never
  // empties) kept the coordinator from its cut parts and epoch reports until the run ended, and the
  // coordinator's mailbox grew all along. One message per turn: each turn is a compute step (ms)
  // against a requeue of a few hundred ns.
  set("scheduler.max-throughput", static_cast<size_t>(1));
  // An idle worker of CAF's work-stealing scheduler polls its queue 100 times, then 500 times with a
  // 50 µs sleep between polls (moderate), then waits on a condition variable that an enqueue from
  // outside the scheduler wakes (relaxed, stealing every 10 ms). With one message per turn a worker is
  // idle after every message, so the moderate phase ran almost all the time, on every worker of every
  // process: those sleeps and wake-ups were about a fifth of the CPU time of a `petra node` holding a
  // stage of ci_smoke on two cores, and skipping them took the default preset with stages on two
  // nodes from about 400 to about 480 images/s there, the one-process run unchanged. The first 100
  // polls still catch a message that follows at once.
  set("work-stealing.moderate-poll-attempts", static_cast<size_t>(0));
  // No BASP workers: a message from another process is deserialized on the network thread, not by a
  // worker queued on the scheduler behind compute-bound stages. CAF delivers a connection's messages
  // in order, so with a worker a heartbeat waited behind every tensor before it, and each of those for
  // a scheduler thread: a `petra node` with one scheduler thread whose stage computed for seconds
  // answered nothing meanwhile and was declared lost while alive (runtime.heartbeat_timeout).
  // Deserializing a tensor is one copy of its block, which the network thread affords.
  set("middleman.workers", static_cast<size_t>(0));
  set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds(1)});
  set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(10)});
}

caf_config::caf_config(int scheduler_threads, const config::tls_config& tls) : caf_config(scheduler_threads) {
  if (!tls.enabled()) return;
  check_tls_files(tls, {"tls.cert", "tls.key", "tls.ca"});
  load<caf::openssl::manager>();
  // With any of these set, CAF's OpenSSL module requires a certificate from both sides
  // (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) and trusts only cafile.
  openssl_certificate = tls.cert;
  openssl_key = tls.key;
  openssl_cafile = tls.ca;
}

caf_config::caf_config(int scheduler_threads, const config::tls_config& tls, double heartbeat_timeout_s)
    : caf_config(scheduler_threads, tls) {
  // The heartbeats find a hung or vanished node (they declare it lost and fence it); CAF's own
  // silence check (middleman.connection-timeout) is only the last resort. At 10 s it raced with the
  // heartbeats for a hung node (when CAF's came first, the node's stage was merely "lost"
  // (remote_link_unreachable), the node was never declared lost, and the stop order could no longer
  // reach it); at twice the heartbeat timeout it closed the connections of a coordinator stopped
  // (SIGSTOP, a debugger, a paused machine) for longer, on waking: its check ran before the
  // heartbeats the nodes had sent meanwhile were read, and the nodes, seeing the connection close,
  // stopped the run's stages. The nodes' own check waits 300 s (`petra node --silence-timeout`):
  // the coordinator waits as long, or twice the heartbeat timeout if that is longer.
  close_connections_silent_for(std::max(300.0, 2 * heartbeat_timeout_s));
}

void caf_config::close_connections_silent_for(double seconds) {
  set("middleman.connection-timeout",
      std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(seconds)));
}

}  // namespace petra

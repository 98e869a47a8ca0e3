// The actor system's configuration: petra's message types registered, the network layer loaded,
// heartbeats on (a hung peer is otherwise never noticed), the scheduler sized to the cores asked for;
// with TLS settings, CAF's OpenSSL module too (both sides present a certificate signed by one CA).
#pragma once

#include <array>
#include <caf/actor_system_config.hpp>
#include <string>

#include "config/config.hpp"

namespace petra {

class caf_config : public caf::actor_system_config {
 public:
  explicit caf_config(int scheduler_threads);
  /// As above; when `tls.enabled()`, also loads caf::openssl::manager with tls.cert, tls.key and
  /// tls.ca (openssl.certificate / openssl.key / openssl.cafile): every TLS peer must present a
  /// certificate signed by tls.ca. Throws std::invalid_argument naming a missing or unreadable file.
  caf_config(int scheduler_threads, const config::tls_config& tls);
  /// The coordinator's: as above, and CAF closes a connection only after it was silent for longer
  /// than the heartbeats take to declare its node lost (runtime.heartbeat_timeout), so that a hung node
  /// is declared lost and fenced (over that connection) rather than found gone first.
  caf_config(int scheduler_threads, const config::tls_config& tls, double heartbeat_timeout_s);

  /// CAF closes a connection on which nothing came for `seconds` (10 s unless set): a `petra node`
  /// waits far longer for its coordinator (`--silence-timeout`), which may be stopped for a while
  /// (a debugger, a paused virtual machine) and go on; a crashed one closes its connections at once.
  void close_connections_silent_for(double seconds);
};

/// Throws std::invalid_argument unless cert, key and ca are all set (or all empty) and each names a
/// readable file; the message names the flag or key (`names` = {cert, key, ca}) and the file.
void check_tls_files(const config::tls_config& tls, const std::array<std::string, 3>& names);

}  // namespace petra

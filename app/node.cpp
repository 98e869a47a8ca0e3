// `petra node`: a process that hosts stage actors for a coordinator. It binds loopback unless
// told otherwise; beyond loopback it refuses to run without TLS. It serves until SIGINT/SIGTERM.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "actors/caf_config.hpp"
#include "actors/node_actor.hpp"
#include "app/commands.hpp"

namespace petra::app {

int node_command(const node_options& options) {
  std::string host;
  uint16_t port = 0;
  try {
    std::tie(host, port) = parse_host_port(options.listen);
  } catch (const std::exception& e) {
    std::cerr << "petra node: --listen " << e.what() << "\n";
    return 2;
  }
  if (!is_loopback(host)) {
    std::cerr << "petra node: refusing to listen on " << host
              << " without TLS: stages and their tensors would cross the network in the clear. "
                 "Listen on 127.0.0.1 (and tunnel), or use TLS when this build supports it.\n";
    return 2;
  }
  // Signals are taken by this thread alone (sigwait), so every actor thread is started with them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  caf_config cfg(options.threads);
  caf::actor_system system(cfg);
  auto node = spawn_node_actor(system);
  auto bound = system.middleman().publish(node, port, host.c_str(), true);
  if (!bound) {
    std::cerr << "petra node: cannot listen on " << options.listen << ": " << system.render(bound.error()) << "\n";
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::printf("petra node listening on %s:%u\n", host.c_str(), static_cast<unsigned>(*bound));
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  std::printf("petra node: signal %d, shutting down\n", received);
  std::fflush(stdout);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  system.middleman().unpublish(node, *bound);
  return 0;
}

}  // namespace petra::app

// `petra node`: a process that hosts stage actors for a coordinator. It binds loopback unless
// told otherwise; beyond loopback it requires TLS (--tls-cert/--tls-key/--tls-ca: both sides present
// a certificate signed by that CA). It serves until SIGINT/SIGTERM, or until a coordinator fences it
// while it holds no other run's stages.
#include <pthread.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "actors/caf_config.hpp"
#include "actors/node_actor.hpp"
#include "actors/node_connection.hpp"
#include "app/commands.hpp"
#include "training/stage_threads.hpp"

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
  const config::tls_config tls{options.tls_cert, options.tls_key, options.tls_ca};
  try {
    check_tls_files(tls, {"--tls-cert", "--tls-key", "--tls-ca"});
  } catch (const std::exception& e) {
    std::cerr << "petra node: " << e.what() << "\n";
    return 2;
  }
  if (!tls.enabled() && !is_loopback(host)) {
    std::cerr << "petra node: refusing to listen on " << host
              << " without TLS: stages and their tensors would cross the network in the clear. "
                 "Give --tls-cert, --tls-key and --tls-ca (see deploy/make-test-ca.sh), or listen on "
                 "127.0.0.1 (and tunnel).\n";
    return 2;
  }
  // Signals are taken by this thread alone (sigwait), so every actor thread is started with them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  caf_config cfg(node_scheduler_threads(options.threads, usable_cores()), tls);
  // A coordinator stopped for a while (a debugger, a paused virtual machine) sends nothing meanwhile;
  // with CAF's 10 s check this node closed the connection and stopped the run's stages, and the
  // coordinator, once continued, had to rebuild them. One that crashed closes its connections at
  // once, and a node found hung is declared lost by the coordinator's heartbeats: this limit only
  // frees the stages of a coordinator whose host vanished without a word.
  cfg.close_connections_silent_for(options.silence_timeout);
  caf::actor_system system(cfg);
  // Fenced (declared lost by the coordinator while it was silent): this thread is woken as by a
  // SIGTERM. Sent to this thread alone: a process-wide signal could reach a thread that does not
  // block it, and end the process there.
  auto node = spawn_node_actor(system, "node " + host + " (pid " + std::to_string(::getpid()) + ")",
                               [main = pthread_self()] { pthread_kill(main, SIGTERM); });
  auto bound = publish_node(system, node, host, port, tls.enabled());
  if (!bound) {
    // The address given cannot be had (in use by another process, not this host's): bad input.
    std::cerr << "petra node: --listen " << options.listen
              << ": cannot listen there (the port is in use, or the address is not this host's): "
              << system.render(bound.error()) << "\n";
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 2;
  }
  std::printf("petra node listening on %s:%u%s\n", host.c_str(), static_cast<unsigned>(*bound),
              tls.enabled() ? " (TLS)" : "");
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  std::printf("petra node: signal %d, shutting down\n", received);
  std::fflush(stdout);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  system.middleman().unpublish(node, *bound);
  // The actor system's end waits for every detached actor's thread; one whose last reference is
  // not released (seen, rarely, after a run with a stage here) would keep the node alive forever.
  // Its work is over and it holds nothing to save: it ends within 10 s whatever remains.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::fflush(nullptr);
    std::_Exit(0);
  }).detach();
  return 0;
}

}  // namespace petra::app

// The heartbeat monitor.
#include "actors/heartbeat.hpp"

#include <algorithm>
#include <caf/all.hpp>
#include <map>

namespace petra {
namespace {

using namespace messages;
using clock_type = std::chrono::steady_clock;

struct watched_node {
  node_actor node;
  std::chrono::duration<double> silent{0};  // since its last answer, counted while this process was awake
  bool lost = false;
};

struct heartbeat_state {
  std::map<std::string, watched_node> nodes;  // by host:port
  clock_type::time_point last_round = clock_type::now();
};

caf::behavior heartbeat_monitor(caf::stateful_actor<heartbeat_state>* self,
                                std::chrono::duration<double> timeout, heartbeat_verdicts verdicts) {
  const auto interval = std::chrono::duration_cast<caf::timespan>(heartbeat_interval(timeout));
  self->send(self, atoms::heartbeat_atom_v);  // the first round; each round books the next
  return {
      [=](atoms::watch_atom, const std::string& where, const caf::actor& handle) {
        const auto node = caf::actor_cast<node_actor>(handle);
        auto& nodes = self->state.nodes;
        auto it = nodes.find(where);
        if (it != nodes.end() && (it->second.lost || it->second.node == node)) return;
        nodes[where] = watched_node{node, std::chrono::duration<double>{0}, false};
      },
      [=](atoms::heartbeat_atom) {
        // Silence counts only while this process listens. A round that comes far later than booked
        // means this process was stopped or starved (SIGSTOP, a paused virtual machine, a debugger):
        // the nodes' answers wait unread meanwhile, and the time slept counts as two intervals at
        // most, as training/awake_timer.hpp counts a stalled pipeline's wait. A node that is silent
        // while this process is awake is still lost after the timeout plus at most one round.
        const auto now = clock_type::now();
        const std::chrono::duration<double> since = now - self->state.last_round;
        self->state.last_round = now;
        const auto counted = std::min(since, std::chrono::duration<double>(2 * interval));
        for (auto& [where, w] : self->state.nodes) {
          if (w.lost) continue;
          w.silent += counted;
          if (w.silent > timeout) {
            w.lost = true;
            verdicts.lost(where, w.node.address(), w.silent.count());
            self->send(w.node, atoms::fence_atom_v);  // read when (if ever) it wakes up
            continue;
          }
          // No timeout of its own: a late answer is counted, and a closed connection answers with
          // an error at once.
          self->request(w.node, std::chrono::seconds(3600), atoms::heartbeat_atom_v)
              .then(
                  [=, where = where](atoms::heartbeat_atom) {
                    auto it = self->state.nodes.find(where);
                    if (it == self->state.nodes.end()) return;
                    if (it->second.lost)
                      verdicts.late(where);
                    else
                      it->second.silent = std::chrono::duration<double>{0};
                  },
                  [=, where = where, node = w.node](caf::error&) {
                    // Its connection closed: the node is gone, not silent, and its stages' loss says
                    // so. It is watched again if it is connected again.
                    auto it = self->state.nodes.find(where);
                    if (it != self->state.nodes.end() && !it->second.lost && it->second.node == node)
                      self->state.nodes.erase(it);
                  });
        }
        self->delayed_send(self, interval, atoms::heartbeat_atom_v);
      },
  };
}

}  // namespace

std::chrono::duration<double> heartbeat_interval(std::chrono::duration<double> timeout) {
  return timeout / 5;
}

caf::actor spawn_heartbeat_monitor(caf::actor_system& system, std::chrono::duration<double> timeout,
                                   heartbeat_verdicts verdicts) {
  return system.spawn<caf::detached>(heartbeat_monitor, timeout, std::move(verdicts));
}

}  // namespace petra

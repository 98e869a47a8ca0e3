// The heartbeat monitor.
#include "actors/heartbeat.hpp"

#include <caf/all.hpp>
#include <map>

namespace petra {
namespace {

using namespace messages;
using clock_type = std::chrono::steady_clock;

struct watched_node {
  node_actor node;
  clock_type::time_point last_answer;
  bool lost = false;
};

struct heartbeat_state {
  std::map<std::string, watched_node> nodes;  // by host:port
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
        nodes[where] = watched_node{node, clock_type::now(), false};
      },
      [=](atoms::heartbeat_atom) {
        const auto now = clock_type::now();
        for (auto& [where, w] : self->state.nodes) {
          if (w.lost) continue;
          const std::chrono::duration<double> silent = now - w.last_answer;
          if (silent > timeout) {
            w.lost = true;
            verdicts.lost(where, w.node.address(), silent.count());
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
                      it->second.last_answer = clock_type::now();
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

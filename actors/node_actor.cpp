// The node actor.
#include "actors/node_actor.hpp"

#include <unistd.h>

#include <algorithm>
#include <caf/all.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "actors/stage_actor.hpp"
#include "config/config.hpp"
#include "messages/errors.hpp"
#include "training/setup.hpp"

namespace petra {
namespace {

using namespace messages;
using namespace atoms;

/// The stages this node built for one run (one coordinator process), while they live.
using run_stages = std::map<caf::node_id, std::vector<stage_actor>>;

struct node_state {
  // Kept alive here; they die with the node. Shared with the exit hook, which runs after the
  // state is gone.
  std::shared_ptr<run_stages> runs = std::make_shared<run_stages>();
  std::set<caf::actor_addr> coordinators;           // monitored: one per run, its trainer
  std::string name;                                 // "node 127.0.0.1:7001", on the timeline
  std::shared_ptr<training::trace_recorder> trace;  // the stages' timeline (output.trace), until exported
};

/// Stops the stages of the run at `run`; returns how many were still running.
std::size_t stop_run(node_state& st, const caf::node_id& run) {
  auto it = st.runs->find(run);
  if (it == st.runs->end()) return 0;
  const std::size_t count = it->second.size();
  for (auto& s : it->second) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  st.runs->erase(it);
  return count;
}

node_actor::behavior_type node_behavior(node_actor::stateful_pointer<node_state> self, std::string name,
                                        std::function<void()> on_fenced) {
  self->state.name = std::move(name);
  self->attach_functor([runs = self->state.runs] {
    for (auto& [run, stages] : *runs)
      for (auto& s : stages) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  });
  // A stage that ended is forgotten; a run whose coordinator is gone (its process ended, or the
  // connection closed: CAF's silence check, or this node woken up after a hang the coordinator gave
  // up on) cannot reach its stages any more, and whatever they would do is stale: they are stopped,
  // and the node goes on listening for the next run.
  self->set_down_handler([=](caf::down_msg& down) {
    auto& st = self->state;
    for (auto& [run, stages] : *st.runs)
      stages.erase(std::remove_if(stages.begin(), stages.end(),
                                  [&](const stage_actor& s) { return s.address() == down.source; }),
                   stages.end());
    if (st.coordinators.erase(down.source) == 0) return;
    if (const std::size_t stopped = stop_run(st, down.source.node()); stopped > 0)
      std::fprintf(stderr,
                   "%s: the coordinator at %s is gone (%s) while %zu of its stage(s) ran here: stopped them; "
                   "listening for the next run\n",
                   st.name.c_str(), caf::to_string(down.source.node()).c_str(),
                   self->system().render(down.reason).c_str(), stopped);
  });
  return {
      [=](const spawn_stage& request) -> caf::result<stage_actor> {
        const int32_t index = request.stage;
        const int64_t steps_per_epoch = request.steps_per_epoch;
        try {
          const config::run_config c = config::parse_config(request.config_yaml, "the coordinator's config");
          const auto sizes = stage_sizes(c);
          if (index < 0 || static_cast<std::size_t>(index) >= sizes.size())
            return caf::make_error(petra_errc::bad_request,
                                   "stage " + std::to_string(index) +
                                       " does not exist (J = " + std::to_string(sizes.size()) + ")");
          const optimizer_settings opt = optimizer_for(c.training, steps_per_epoch);
          auto placed = build_placed_stages(
              c, opt, [&](std::size_t j) { return j == static_cast<std::size_t>(index); });
          auto& st = self->state;
          if (c.output.trace && !st.trace) {
            const int64_t per_epoch =
                steps_per_epoch * c.training.accumulation;  // the ids of epoch 1 start there
            st.trace = std::make_shared<training::trace_recorder>(per_epoch + c.output.trace_steps[0],
                                                                  per_epoch + c.output.trace_steps[1]);
          }
          auto s = spawn_stage_actor(
              self->system(), make_stage_context(c, placed[index], index, static_cast<int32_t>(sizes.size()),
                                                 c.output.trace ? st.trace : nullptr, st.name));
          // The run is its coordinator's process: the sender of this request is its trainer.
          const caf::strong_actor_ptr& sender = self->current_sender();
          const caf::node_id run = sender ? sender->node() : caf::node_id{};
          (*st.runs)[run].push_back(s);
          self->monitor(s);
          if (sender && st.coordinators.insert(caf::actor_cast<caf::actor_addr>(sender)).second)
            self->monitor(sender);
          return s;
        } catch (const std::exception& e) {
          return caf::make_error(petra_errc::bad_request, std::string("node cannot build stage ") +
                                                              std::to_string(index + 1) + ": " + e.what());
        }
      },
      [=](ping_atom) { return training::trace_time_us(training::trace_clock::now()); },
      [=](trace_atom) {
        auto& st = self->state;
        const std::string text =
            st.trace ? st.trace->export_json() : training::trace_recorder{}.export_json();
        st.trace.reset();  // the next run starts a timeline of its own
        return text;
      },
      [=](atoms::heartbeat_atom) { return atoms::heartbeat_atom_v; },
      [=](atoms::fence_atom) {
        // The coordinator declared this node lost while it was silent (stopped, frozen) and moved
        // its stages elsewhere: whatever they would still do is stale. Stop them; the process ends
        // unless it holds stages of other runs (other coordinators), which go on.
        auto& st = self->state;
        const caf::strong_actor_ptr& sender = self->current_sender();
        const std::size_t stopped = stop_run(st, sender ? sender->node() : caf::node_id{});
        std::size_t others = 0;
        for (const auto& [run, stages] : *st.runs) others += stages.empty() ? 0 : 1;
        if (others > 0) {
          std::fprintf(stderr,
                       "%s: fenced by one run (its coordinator declared this node lost while it was silent): "
                       "stopped its %zu stage(s); still serving %zu other run(s)\n",
                       st.name.c_str(), stopped, others);
          return;
        }
        std::fprintf(stderr,
                     "%s: fenced (the coordinator declared this node lost while it was silent): "
                     "stopped its %zu stage(s); exiting\n",
                     st.name.c_str(), stopped);
        if (on_fenced) on_fenced();
      },
      [=](const kill_node& order) {
        // Fault injection: the whole process is killed (SIGKILL), without a goodbye to its peers.
        std::thread([seconds = order.seconds] {
          std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
          std::fprintf(stderr, "petra node: injected kill (faults.kill_node): SIGKILL\n");
          ::kill(::getpid(), SIGKILL);
        }).detach();
      },
  };
}

}  // namespace

messages::node_actor spawn_node_actor(caf::actor_system& sys, std::string name,
                                      std::function<void()> on_fenced) {
  // Detached: its heartbeat answers wait for no stage's computation on the scheduler's threads.
  return sys.spawn<caf::detached>(node_behavior, std::move(name), std::move(on_fenced));
}

std::pair<std::string, uint16_t> parse_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument("'" + text + "' is not host:port");
  const std::string port = text.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) > 65535)
    throw std::invalid_argument("'" + text + "': port must be a number 0-65535");
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, static_cast<uint16_t>(std::stoi(port))};
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace petra

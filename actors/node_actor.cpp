// The node actor.
#include "actors/node_actor.hpp"

#include <unistd.h>

#include <caf/all.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "actors/stage_actor.hpp"
#include "config/config.hpp"
#include "messages/errors.hpp"
#include "training/setup.hpp"

namespace petra {
namespace {

using namespace messages;
using namespace atoms;

struct node_state {
  // Kept alive here; they die with the node. Shared with the exit hook, which runs after the
  // state is gone.
  std::shared_ptr<std::vector<stage_actor>> stages = std::make_shared<std::vector<stage_actor>>();
  std::string name;                                 // "node 127.0.0.1:7001", on the timeline
  std::shared_ptr<training::trace_recorder> trace;  // the stages' timeline (output.trace), until exported
};

node_actor::behavior_type node_behavior(node_actor::stateful_pointer<node_state> self, std::string name,
                                        std::function<void()> on_fenced) {
  self->state.name = std::move(name);
  self->attach_functor([stages = self->state.stages] {
    for (auto& s : *stages) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
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
          self->state.stages->push_back(s);
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
        // its stages elsewhere: whatever they would still do is stale. Stop them, and the process.
        std::fprintf(stderr,
                     "%s: fenced (the coordinator declared this node lost while it was silent): "
                     "stopping its stages and exiting\n",
                     self->state.name.c_str());
        for (auto& s : *self->state.stages) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
        self->state.stages->clear();
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

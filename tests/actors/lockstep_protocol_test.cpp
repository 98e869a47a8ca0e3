// The lockstep protocol, step by step under CAF's deterministic test scheduler: a tick runs only
// when its forward and backward inputs are both there, and sends exactly one message per
// neighbour stamped for the next tick, none past the phase; a fenced neighbour's message is dropped.
#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/caf_config.hpp"
#include "actors/stage_actor.hpp"

using namespace petra;
using namespace petra::messages;
using namespace petra::atoms;

namespace {

class identity_block : public block {
 public:
  identity_block() : block("identity") {}
  std::string kind() const override { return "stem"; }
  activation forward(const activation& x, pass, tape*) override { return x; }
  activation backward(tape&, const activation& dy) override { return dy; }
  activation_shape output_shape(const activation_shape& x) const override { return x; }
  std::vector<parameter*> parameters() override { return {}; }
  std::vector<buffer_ref> buffers() override { return {}; }
};

struct recorded {
  std::vector<int64_t> forward_ticks;  // stamps of forwards sent downstream
  std::vector<int32_t> forward_generations;
  int64_t credits = 0;
  int done = 0;
  int fenced = 0;  // fault events: late messages of a fenced neighbour dropped
};

caf::behavior protocol_recorder(caf::event_based_actor*, std::shared_ptr<recorded> log) {
  return {
      [=](forward_data& f) {
        log->forward_ticks.push_back(f.s.tick);
        log->forward_generations.push_back(f.s.generation);
      },
      [=](credit_return& c) { log->credits += c.count; },
      [=](phase_done&) { ++log->done; },
      [=](fault_event& e) { log->fenced += e.kind == fault_kind::fenced; },
  };
}

struct deterministic_system {
  caf_config cfg{1};
  deterministic_system() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("middleman.network-backend", caf::atom("testing"));
    cfg.set("middleman.manual-multiplexing", true);
    cfg.set("middleman.heartbeat-interval", caf::timespan{0});
    cfg.set("middleman.workers", size_t{0});
  }
};

activation image() { return activation{tensor::zeros({2, 1, 2, 2}), {}}; }

/// The test scheduler runs only scheduled actors: the stage stays on it instead of a thread of its own.
stage_context on_test_scheduler(stage_context c) {
  c.own_thread = false;
  return c;
}

}  // namespace

TEST_CASE("lockstep: tick t waits for both inputs, one message per neighbour, stamped t + 1") {
  deterministic_system setup;
  caf::actor_system sys(setup.cfg);
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  auto log = std::make_shared<recorded>();
  auto sink = sys.spawn(protocol_recorder, log);

  auto device = std::shared_ptr<backend>(make_cpu_backend(1));
  std::vector<std::unique_ptr<block>> blocks;
  blocks.push_back(std::make_unique<identity_block>());
  auto compute =
      std::make_shared<stage>(0, std::move(blocks), *device, optimizer_settings{}, stage_options{});
  auto first = spawn_stage_actor(
      sys, on_test_scheduler(stage_context{device, compute, 0, config::runtime_mode::lockstep}));
  stage_links links;
  links.next = caf::actor_cast<forward_sink>(sink);
  links.loader = caf::actor_cast<loader_actor>(sink);
  links.coordinator = caf::actor_cast<coordinator_actor>(sink);
  links.count = 2;
  caf::anon_send(first, links);
  caf::anon_send(first, plan_atom_v, phase_plan{1, 2, 4, 0});
  sched.run();

  caf::anon_send(first, forward_data{stamp{0, 0, 0, -1}, image()});  // tick 0 needs no backward
  sched.run();
  CHECK(compute->stats().forwards == 1);
  CHECK(log->forward_ticks == std::vector<int64_t>{1});

  caf::anon_send(first, forward_data{stamp{1, 1, 0, -1}, image()});
  sched.run();
  CHECK(compute->stats().forwards == 1);  // tick 1 waits for its backward input
  caf::anon_send(first, backward_data{stamp{-1, 1, 0, 1}, {}, {}});
  sched.run();
  CHECK(compute->stats().forwards == 2);
  CHECK(log->forward_ticks == std::vector<int64_t>{1, 2});

  // Tick 2: no new image (drain), the backward of micro-batch 0 arrives.
  caf::anon_send(first, backward_data{stamp{0, 2, 0, 1}, image(), image()});
  sched.run();
  CHECK(compute->stats().backwards == 0);  // the loader's marker for tick 2 is still missing
  caf::anon_send(first, forward_data{stamp{-1, 2, 0, -1}, {}});
  sched.run();
  CHECK(compute->stats().backwards == 1);
  CHECK(log->forward_ticks == std::vector<int64_t>{1, 2, 3});

  // Tick 3, the phase's last: nothing is sent for tick 4, and the stage reports done.
  caf::anon_send(first, forward_data{stamp{-1, 3, 0, -1}, {}});
  caf::anon_send(first, backward_data{stamp{1, 3, 0, 1}, image(), image()});
  sched.run();
  CHECK(compute->stats().backwards == 2);
  CHECK(log->forward_ticks == std::vector<int64_t>{1, 2, 3});
  CHECK(log->credits == 4);
  CHECK(log->done == 1);
  CHECK(compute->outstanding() == 0);

  caf::anon_send_exit(first, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_CASE("lockstep: a neighbour's message of an older generation than the one wired is fenced") {
  deterministic_system setup;
  caf::actor_system sys(setup.cfg);
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  auto log = std::make_shared<recorded>();
  auto sink = sys.spawn(protocol_recorder, log);
  auto device = std::shared_ptr<backend>(make_cpu_backend(1));
  std::vector<std::unique_ptr<block>> blocks;
  blocks.push_back(std::make_unique<identity_block>());
  auto compute =
      std::make_shared<stage>(0, std::move(blocks), *device, optimizer_settings{}, stage_options{});
  auto first = spawn_stage_actor(
      sys, on_test_scheduler(stage_context{device, compute, 0, config::runtime_mode::lockstep}));
  stage_links links;
  links.next = caf::actor_cast<forward_sink>(sink);
  links.loader = caf::actor_cast<loader_actor>(sink);
  links.coordinator = caf::actor_cast<coordinator_actor>(sink);
  links.count = 2;
  links.generation = 3;
  links.next_generation = 5;  // stage 2 was rebuilt: generation 4 is the lost one's
  caf::anon_send(first, links);
  caf::anon_send(first, plan_atom_v, phase_plan{1, 2, 4, 0});
  sched.run();
  caf::anon_send(first, forward_data{stamp{0, 0, 0, -1}, image()});
  sched.run();
  caf::anon_send(first, forward_data{stamp{1, 1, 0, -1}, image()});
  // The lost stage 2 woke up: its marker for tick 1 is dropped and counted, tick 1 still waits.
  caf::anon_send(first, backward_data{stamp{-1, 1, 0, 1, 0, 4}, {}, {}});
  sched.run();
  CHECK(log->fenced == 1);
  CHECK(compute->stats().forwards == 1);
  // The rebuilt stage's (generation 5, or newer: wired to it before this stage heard) are taken.
  caf::anon_send(first, backward_data{stamp{-1, 1, 0, 1, 0, 5}, {}, {}});
  sched.run();
  CHECK(compute->stats().forwards == 2);
  CHECK(log->forward_ticks == std::vector<int64_t>{1, 2});
  caf::anon_send(first, forward_data{stamp{-1, 2, 0, -1}, {}});
  caf::anon_send(first, backward_data{stamp{0, 2, 0, 1, 0, 4}, image(), image()});  // fenced again
  caf::anon_send(first, backward_data{stamp{0, 2, 0, 1, 0, 6}, image(), image()});
  sched.run();
  CHECK(log->fenced == 2);
  CHECK(compute->stats().backwards == 1);
  CHECK(log->forward_ticks == std::vector<int64_t>{1, 2, 3});
  CHECK(log->forward_generations == std::vector<int32_t>{3, 3, 3});  // what it sends carries its own
  caf::anon_send_exit(first, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  sched.run();
}

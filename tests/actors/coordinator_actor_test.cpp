// The coordinator is an actor of its own that hands every event of its pipeline to the trainer thread
// as a message: the trainer's record takes them in, in the order they came, whenever the trainer
// reads or changes it or waits, and what the trainer acts on later is what came first.
#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "actors/caf_config.hpp"
#include "actors/control.hpp"

using namespace petra;
using namespace petra::messages;

namespace {

// On a go (any int32), sends `events` to the coordinator, then keeps answering ints with themselves.
caf::behavior event_writer(caf::event_based_actor* self, coordinator_actor to) {
  return {[=](int32_t go) {
    if (go != 1) return go;
    self->send(to, fault_event{0, fault_kind::drop, 1});
    self->send(to, loss_report{1, 64, 10, 2.0});
    self->send(to, loss_report{2, 128, 30, 3.5});
    self->send(to, fault_event{0, fault_kind::duplicate, 1});
    return go;
  }};
}

// On a go, reports its failure to the coordinator and quits with the failure's code (a stage that
// throws does both).
caf::behavior failing_stage(caf::event_based_actor* self, coordinator_actor to) {
  return {[=](int32_t) {
    self->send(to, failure_report{0, 5, 3, static_cast<uint8_t>(petra_errc::stage_exception), "boom", 1});
    self->quit(caf::make_error(petra_errc::stage_exception, std::string("boom")));
  }};
}

template <class Done>
void wait_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

}  // namespace

TEST_CASE("coordinator actor: events sent while the trainer thread is busy are taken, in order") {
  caf_config cfg{2};
  caf::actor_system sys{cfg};
  control_channel control(sys, std::chrono::seconds(5));
  auto writer = sys.spawn(event_writer, control.handle());
  control.watch({writer.address()}, {-1}, 1);
  std::vector<int64_t> seen;
  control.begin_attempt(
      1, [&](const loss_report& r, const std::vector<stage_window>&) { seen.push_back(r.micro_batches); },
      nullptr);
  caf::anon_send(writer, int32_t{1});
  // The trainer thread only reads its counts here: each read takes in the events that came.
  wait_until([&] { return control.faults().front().duplicates == 1; });
  CHECK(control.faults().front().drops == 1);
  CHECK(control.faults().front().duplicates == 1);
  CHECK(seen.empty());  // progress is the trainer's to report, when it next waits
  CHECK(control.ask<int32_t>(writer, std::chrono::seconds(5), int32_t{7}) == 7);
  CHECK(seen == std::vector<int64_t>{1, 2});
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);
}

TEST_CASE(
    "coordinator actor: a stage's down taken before its failure report is handled still reports the "
    "failure") {
  caf_config cfg{2};
  caf::actor_system sys{cfg};
  control_channel control(sys, std::chrono::seconds(1));
  auto stage = sys.spawn(failing_stage, control.handle());
  const caf::actor_addr address = stage.address();
  control.watch({address}, {0}, 1);
  control.monitor(stage);
  control.begin_attempt(1, {}, nullptr);
  caf::anon_send(stage, int32_t{1});
  stage = nullptr;
  // The trainer thread is busy while the stage reports, quits, and its down reaches the coordinator.
  wait_until([&] { return caf::actor_cast<caf::strong_actor_ptr>(address) == nullptr; });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  try {
    control.await_phase_ends(1, [] { FAIL("the failure was not reported"); });
    FAIL("the phase cannot end");
  } catch (const run_failure& f) {
    CHECK(f.kind() == failure_kind::stage_exception);
    CHECK(f.stage() == 0);
    CHECK(f.tick() == 5);
    CHECK(std::string(f.what()) == "stage 1 at tick 5: boom");
  }
  // Once the lost stage is no longer watched, its down still queued is stale: the next wait stalls.
  control.unwatch(address);
  CHECK_THROWS_WITH(control.await_phase_ends(1, [] { throw std::runtime_error("stall"); }), "stall");
}

TEST_CASE(
    "coordinator actor: a node the heartbeats declare lost fails the attempt and its actors are fenced") {
  caf_config cfg{2};
  caf::actor_system sys{cfg};
  control_channel control(sys, std::chrono::seconds(5));
  auto old_stage = sys.spawn(event_writer, control.handle());  // stage 2 of the node, say
  auto node = sys.spawn(event_writer, control.handle());
  control.watch({old_stage.address()}, {1}, 1);
  control.place_nodes({{"127.0.0.1:7001", 1}});
  control.begin_attempt(2, {}, nullptr);
  const heartbeat_verdicts verdicts = control.verdicts(2);  // the heartbeat monitor's, from its thread
  std::thread([&] { verdicts.lost("127.0.0.1:7001", node.address(), 2.3); }).join();
  try {
    control.await_phase_ends(2, [] { FAIL("the lost node was not reported"); });
    FAIL("the phase cannot end");
  } catch (const run_failure& f) {
    CHECK(f.kind() == failure_kind::lost_actor);
    CHECK(f.stage() == 1);
    CHECK(std::string(f.what()).find("node 127.0.0.1:7001 silent for 2.3 s (runtime.heartbeat_timeout 2 s): "
                                     "declared lost") != std::string::npos);
  }
  CHECK(control.declared_lost("127.0.0.1:7001"));
  CHECK_FALSE(control.declared_lost("127.0.0.1:7002"));
  // The node wakes up: what its old stage still sends (faults, progress) is dropped and counted.
  control.fence(old_stage.address());
  CHECK(control.late_messages() == 0);
  caf::anon_send(old_stage, int32_t{1});
  wait_until([&] { return control.late_messages() == 4; });
  CHECK(control.late_messages() == 4);
  CHECK(control.faults()[0].drops == 0);
  CHECK(control.faults()[0].duplicates == 0);
  verdicts.late("127.0.0.1:7001");  // a heartbeat answer, at the monitor
  wait_until([&] { return control.late_messages() == 5; });
  CHECK(control.late_messages() == 5);
  caf::anon_send_exit(old_stage, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
}

TEST_CASE(
    "coordinator actor: what came from a pipeline before the trainer watched the next is not acted on") {
  caf_config cfg{2};
  caf::actor_system sys{cfg};
  control_channel control(sys, std::chrono::seconds(5));
  auto old_writer = sys.spawn(event_writer, control.handle());
  auto next = sys.spawn(event_writer, control.handle());
  control.watch({old_writer.address()}, {-1}, 1);
  std::vector<int64_t> seen;
  control.begin_attempt(
      1, [&](const loss_report& r, const std::vector<stage_window>&) { seen.push_back(r.micro_batches); },
      nullptr);
  caf::anon_send(old_writer, int32_t{1});
  wait_until([&] { return control.faults().front().duplicates == 1; });  // all four are in
  control.watch({next.address()}, {-1}, 1);  // a new pipeline: the old one's progress is stale
  const int32_t echo7 = control.ask<int32_t>(next, std::chrono::seconds(5), int32_t{7});
  CHECK(echo7 == 7);
  CHECK(seen.empty());
  caf::anon_send(next, int32_t{1});
  wait_until([&] { return control.faults().front().duplicates == 2; });
  const int32_t echo8 = control.ask<int32_t>(next, std::chrono::seconds(5), int32_t{8});
  CHECK(echo8 == 8);
  CHECK(seen == std::vector<int64_t>{1, 2});
  caf::anon_send_exit(old_writer, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(next, caf::exit_reason::user_shutdown);
}

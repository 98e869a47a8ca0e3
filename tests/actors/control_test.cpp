// The trainer thread's mailbox (control_channel's scoped actor: control replies and the coordinator
// actor's wake-ups) lets go of the actors that wrote to it. A message queued in a CAF 0.17
// blocking actor keeps its sender alive, and a detached actor still alive when its actor system is
// destroyed blocks that destructor forever: the runtime's shutdown depends on both tests below.
#include "actors/control.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <string>

#include "actors/caf_config.hpp"

using namespace petra;

namespace {

// A detached actor that writes to `to` what the trainer thread has no handler for, then idles.
caf::behavior stray_writer(caf::event_based_actor* self, caf::actor to) {
  self->send(to, std::string("no handler takes this"), int64_t{42});
  return {[](int32_t) {}};
}

}  // namespace

TEST_CASE("trainer mailbox: what no handler takes is dropped, so its detached sender is destroyed") {
  caf_config cfg{2};
  caf::actor_system sys{cfg};
  control_channel control(sys, std::chrono::seconds(5));
  auto writer = sys.spawn<caf::detached>(stray_writer, caf::actor_cast<caf::actor>(control.self()));
  const caf::actor_addr address = writer.address();
  // The stray message arrives and is dropped (with the catch-all of CAF 0.17, not a handler of
  // caf::message&, which matches nothing and would leave it queued).
  control.drain();
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);
  writer = nullptr;
  const auto left = control.await_gone({address}, std::chrono::seconds(20));
  CHECK(left.empty());
  CHECK(caf::actor_cast<caf::strong_actor_ptr>(address) == nullptr);
}

TEST_CASE("trainer mailbox: await_gone names the actors still referenced when time runs out") {
  caf_config cfg{2};
  caf::actor_system sys{cfg};
  control_channel control(sys, std::chrono::seconds(5));
  auto alive = sys.spawn(stray_writer, caf::actor_cast<caf::actor>(control.self()));
  const auto left = control.await_gone({alive.address()}, std::chrono::milliseconds(50));
  REQUIRE(left.size() == 1);
  CHECK(left.front() == alive.address());
  caf::anon_send_exit(alive, caf::exit_reason::user_shutdown);
}

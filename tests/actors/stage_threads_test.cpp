// Every stage computes at the same time as the others: J stage actors whose forwards wait at one
// barrier that only J forwards running at once can pass. On a scheduler of fewer threads than J
// (CPU stages scheduled on CAF's workers) the first forwards hold every worker and the others never
// start: the barrier gives up, and the test fails.
#include "training/stage_threads.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "actors/caf_config.hpp"
#include "actors/stage_actor.hpp"
#include "compute/cpu/pinning.hpp"
#include "tests/probe_block.hpp"
#include "tests/skip.hpp"

using namespace petra;
using namespace petra::messages;
using namespace petra::atoms;

namespace {

/// Forwards that arrive here wait for `expected` of them; the wait gives up after `patience` (a
/// deadlock breaker, not a timing: J concurrent stages pass at once).
struct barrier {
  explicit barrier(int expected) : expected_(expected) {}
  bool arrive_and_wait(std::chrono::seconds patience) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (++arrived_ == expected_) woken_.notify_all();
    return woken_.wait_for(lock, patience, [&] { return arrived_ >= expected_; });
  }
  int arrived() {
    std::lock_guard<std::mutex> lock(mutex_);
    return arrived_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable woken_;
  int expected_;
  int arrived_ = 0;
};

}  // namespace

TEST_CASE("J stages on a scheduler of 2 threads compute at the same time: a barrier of J passes") {
  constexpr int stages = 5;
  for (const auto mode : {config::runtime_mode::lockstep, config::runtime_mode::async}) {
    CAPTURE(config::to_string(mode));
    auto at = std::make_shared<barrier>(stages);
    auto passed = std::make_shared<std::atomic<int>>(0);
    caf_config cfg(2);
    caf::actor_system sys(cfg);
    caf::scoped_actor coordinator(sys);
    const caf::actor me = caf::actor_cast<caf::actor>(coordinator);
    std::vector<std::shared_ptr<backend>> devices;
    std::vector<stage_actor> actors;
    for (int j = 0; j < stages; ++j) {
      devices.push_back(std::shared_ptr<backend>(make_cpu_backend(1)));
      std::vector<std::unique_ptr<block>> blocks;
      blocks.push_back(std::make_unique<testing::probe_block>("barrier", [at, passed] {
        if (at->arrive_and_wait(std::chrono::seconds(60))) passed->fetch_add(1);
      }));
      auto compute = std::make_shared<stage>(0, std::move(blocks), *devices.back(), optimizer_settings{},
                                             stage_options{});
      // Each a first stage of two whose output goes to the test: only the barrier joins them.
      actors.push_back(spawn_stage_actor(sys, stage_context{devices.back(), compute, 0, mode}));
      stage_links links;
      links.next = caf::actor_cast<forward_sink>(me);
      links.loader = caf::actor_cast<loader_actor>(me);
      links.coordinator = caf::actor_cast<coordinator_actor>(me);
      links.count = 2;
      coordinator->request(actors.back(), std::chrono::seconds(30), links)
          .receive([](wire_atom) {}, [&](caf::error& e) { FAIL(sys.render(e)); });
      // Lockstep: tick 0's forward is sent stamped tick 1, inside a phase of 2 ticks.
      coordinator->request(actors.back(), std::chrono::seconds(30), plan_atom_v, phase_plan{1, 1, 2, 0})
          .receive([](plan_atom) {}, [&](caf::error& e) { FAIL(sys.render(e)); });
    }
    for (auto& s : actors)
      coordinator->send(s, forward_data{stamp{0, 0, 0, -1}, activation{tensor::zeros({2, 1, 2, 2}), {}}});
    int forwarded = 0;
    bool timed_out = false;  // other messages (credits, reports) stay in the mailbox, unread
    while (forwarded < stages && !timed_out)
      coordinator->receive([&](forward_data&) { ++forwarded; },
                           caf::after(std::chrono::seconds(90)) >> [&] { timed_out = true; });
    CHECK(forwarded == stages);
    CHECK(at->arrived() == stages);
    CHECK(passed->load() == stages);  // all J forwards were waiting at the barrier at once
    for (auto& s : actors) coordinator->send_exit(s, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE("a pinned compute team runs thread i on core i of the stage's cores") {
  if (usable_cores() < 2) PETRA_SKIP("needs 2 usable cores to pin a team of 2 to distinct ones");
  // On a thread of its own: pinning changes the mask of the thread that asks, and of its team.
  std::vector<int> seen;
  bool ok = false;
  std::string why;
  std::thread([&] {
    ok = cpu::pin_compute_team({1, 0}, &why);
    seen = cpu::team_cores(2);
  }).join();
  REQUIRE_MESSAGE(ok, why);
  CHECK(seen == std::vector<int>{1, 0});
}

// The actor system's scheduler takes turns: an actor whose mailbox never empties (a busy async
// stage) does not keep the actors it wakes (the coordinator) waiting behind it on its worker.
#include <doctest/doctest.h>

#include <atomic>
#include <caf/all.hpp>
#include <memory>

#include "actors/caf_config.hpp"

namespace {

struct shared_counts {
  std::atomic<bool> heard{false};
  std::atomic<int64_t> turns{0};
  std::atomic<int64_t> turns_when_heard{-1};
};

/// Wakes `listener` once, then sends itself one message after another until the listener has
/// run or `limit` turns have passed: its mailbox is never empty meanwhile.
caf::behavior busy(caf::event_based_actor* self, caf::actor listener, std::shared_ptr<shared_counts> counts,
                   int64_t limit) {
  self->send(listener, int64_t{0});
  self->send(self, int64_t{1});
  return {[=](int64_t n) {
    counts->turns.fetch_add(1);
    if (counts->heard.load() || n >= limit) {
      self->quit();
      return;
    }
    self->send(self, n + 1);
  }};
}

caf::behavior listener(caf::event_based_actor* self, std::shared_ptr<shared_counts> counts) {
  return {[=](int64_t) {
    if (!counts->heard.exchange(true)) counts->turns_when_heard.store(counts->turns.load());
    self->quit();
  }};
}

}  // namespace

TEST_CASE("as many always-busy actors as scheduler threads: an actor they wake still gets its turn") {
  constexpr int threads = 2;
  constexpr int64_t limit = 200000;  // turns each busy actor takes at most before giving up
  auto counts = std::make_shared<shared_counts>();
  {
    petra::caf_config cfg(threads);
    caf::actor_system system(cfg);
    const caf::actor heard = system.spawn(listener, counts);
    for (int i = 0; i < threads; ++i) system.spawn(busy, heard, counts, limit);
    system.await_all_actors_done();
  }
  INFO("the woken actor ran after " << counts->turns_when_heard.load() << " turns of the busy ones");
  REQUIRE(counts->heard.load());
  // Without turns it runs only once a busy actor gives up: after `limit` turns.
  CHECK(counts->turns_when_heard.load() < limit);
}

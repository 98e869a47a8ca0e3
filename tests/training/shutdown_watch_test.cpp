// training/shutdown_watch.hpp: a complete run's teardown that does not end is reported (where it
// was, which run) and ended; one that ends in time is left alone.
#include "training/shutdown_watch.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace petra::training;
using namespace std::chrono_literals;

namespace {

/// Waits (bounded, 30 s) until `fired` is set; the watch's limit in these tests is milliseconds.
bool eventually(const std::atomic<bool>& fired) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!fired && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  return fired;
}

}  // namespace

TEST_CASE("shutdown watch: a teardown that does not end is reported with its run and step") {
  shutdown_watch watch;
  std::atomic<bool> fired{false};
  std::string said;
  watch.arm(20ms, "petra train", "/runs/tiny-petra-1", [&](const std::string& line) {
    said = line;
    fired = true;
  });
  shutdown_watch::note_step("the actor system's shutdown, with 1 actor(s) still running and 0 detached");
  REQUIRE(eventually(fired));
  watch.disarm();  // joins the watch's thread: `said` is complete
  CHECK(said.rfind("petra train: the run is complete", 0) == 0);
  CHECK(said.find("/runs/tiny-petra-1") != std::string::npos);
  CHECK(said.find("(at: the actor system's shutdown, with 1 actor(s) still running") != std::string::npos);
  CHECK(said.find("exiting without waiting") != std::string::npos);
}

TEST_CASE("shutdown watch: a teardown that ends in time is left alone") {
  std::atomic<bool> fired{false};
  {
    shutdown_watch watch;
    watch.arm(std::chrono::hours(1), "petra train", "/runs/a", [&](const std::string&) { fired = true; });
    watch.disarm();  // returns at once: the hour is not waited for
    // Re-armed for the next run of the process (a sweep's next point), then gone with its scope.
    watch.arm(std::chrono::hours(1), "petra train", "/runs/b", [&](const std::string&) { fired = true; });
  }
  CHECK_FALSE(fired);
  // Arming starts with no step: an earlier run's last step is not reported for this one.
  shutdown_watch::note_step("stopping the pipeline's actors");
  shutdown_watch watch;
  watch.arm(std::chrono::hours(1), "petra train", "/runs/c", [](const std::string&) {});
  CHECK(shutdown_watch::last_step().empty());
  watch.disarm();
  watch.disarm();  // twice is harmless
}

// Forward gradients under injected faults (docs/design.md §6) in the actor runtimes: link delays move each
// stage's measured delay by exactly the ticks on its derivatives' round trip and a lockstep run stays
// deterministic; slow stages, doubled messages and doubled derivatives change no bit (a copy is
// discarded, never applied twice); lost messages and crashes roll back to the last drained
// checkpoint and replay, ending bit-identical to a clean run with every micro-batch accounted for.
#include "app/commands.hpp"
#include "tests/actors/run_dirs.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

config::run_config fg_tiny(const std::string& mode) {
  config::run_config c = tiny_config(mode, "forward_gradient", 256);
  c.training.forward_gradient.aux_width = 8;
  return c;
}

/// `petra train` settings of a forward-gradient run of tiny (J = 4, 32 micro-batches, a drained
/// checkpoint every 8).
std::vector<std::string> fg_sets(const run_dirs& dirs, const std::string& mode, const std::string& name,
                                 std::vector<std::string> more) {
  more.insert(more.begin(), {"training.method=forward_gradient", "training.forward_gradient.aux_width=8"});
  return dirs.sets(mode, name, std::move(more));
}

int64_t sum_of(const nlohmann::json& stages, const char* key) {
  int64_t n = 0;
  for (const auto& s : stages) n += s.value(key, int64_t{0});
  return n;
}

}  // namespace

TEST_CASE("lockstep forward_gradient link delays: stage j's delay grows by the ticks on its round trip") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = fg_tiny("lockstep");
  const trained clean = train_once(c);
  c.faults.backward_delay = {0, 3, 0};  // the derivatives coming back to stage 2
  c.faults.forward_delay = {0, 0, 2};   // the link stage 3 → stage 4, on every guess's way to the loss
  const trained delayed = train_once(c);
  const auto& a = clean.stages;
  const auto& b = delayed.stages;
  CHECK(only_delay(b[3]) == only_delay(a[3]));      // the head: the true gradient in its own tick
  CHECK(only_delay(b[2]) == only_delay(a[2]) + 2);  // stage 3: its guess crosses the delayed link
  CHECK(only_delay(b[1]) == only_delay(a[1]) + 2 + 3);
  CHECK(only_delay(b[0]) == only_delay(a[0]) + 2);  // stage 1's derivatives come back on time
  for (std::size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    CHECK(b[j]["expected_delay_ticks"].get<int64_t>() == only_delay(b[j]));
    CHECK(b[j]["backwards"] == a[j]["backwards"]);
  }
  CHECK(delayed.totals.micro_batches == clean.totals.micro_batches);
  CHECK(total(delayed.totals.faults).delays > 0);
  CHECK(differing(clean, delayed) > 0);  // stale estimates: other weights
  // Lockstep: the same delays give the same weights, run after run.
  CHECK(differing(delayed, train_once(c)) == 0);
}

TEST_CASE("lockstep forward_gradient: a slow stage, doubled messages and doubled derivatives change no bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = fg_tiny("lockstep");
  const trained clean = train_once(c);
  const int64_t count = clean.totals.micro_batches;

  c.faults.slow = {1, 3, 1, 1};
  const trained slow = train_once(c);
  for (std::size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    const auto& s = slow.stages[j];
    const int64_t computations = s["forwards"].get<int64_t>() + s["backwards"].get<int64_t>();
    CHECK(slow.totals.faults[j].slowed == (j == 1 ? computations : 0));
  }
  CHECK(differing(clean, slow) == 0);

  c.faults.slow.clear();
  c.faults.duplicate = {0.5, 0.5, 0.5, 0.5};
  const trained doubled = train_once(c);
  const int64_t injected = sum_of(doubled.stages, "injected_duplicates");
  CHECK(injected > 10);
  CHECK(sum_of(doubled.stages, "duplicates_discarded") == injected);
  // Derivatives came twice to every stage before the last (each copy is counted where it arrives)...
  for (std::size_t j = 0; j + 1 < 4; ++j) {
    CAPTURE(j);
    CHECK(doubled.stages[j]["upstream_messages"].get<int64_t>() > count);
    CHECK(doubled.stages[j]["backwards"].get<int64_t>() == count);
  }
  // ...and none was applied twice: the weights are the clean run's, bit for bit.
  CHECK(differing(clean, doubled) == 0);
}

TEST_CASE(
    "lockstep forward_gradient: lost messages stall, the phase rolls back and replays bit-identically") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs("petra-fg-faults-");
  REQUIRE(app::train_command({"tiny", fg_sets(dirs, "lockstep", "clean", {}), "", 0}) == 0);
  // Stage 2 loses forward messages on its link to stage 3 and derivatives on their way back to it.
  REQUIRE(app::train_command(
              {"tiny",
               fg_sets(dirs, "lockstep", "dropped", {"faults.drop=[0,0.1,0,0]", "faults.stall_seconds=1"}),
               "", 0}) == 0);
  CHECK(differing(dirs.weights("clean"), dirs.weights("dropped")) == 0);
  const nlohmann::json counted = dirs.summary("dropped")["micro_batches"];
  const int64_t restarts = counted["restarts"].get<int64_t>();
  CHECK(restarts >= 1);
  CHECK(counted["completed"] == 32);
  CHECK(counted["lost"] == 0);
  int64_t failures = 0, injected = 0;
  for (const auto& f : dirs.events("dropped", "failure")) {
    ++failures;
    MESSAGE("failure: " << f["what"]);
    CHECK(f["kind"] == "stall");
    const std::string what = f["what"].get<std::string>();
    const bool forward = f["stage"] == 3 && what.find("lost on the link 2 -> 3") != std::string::npos;
    const bool back = f["stage"] == 2 && what.find("derivatives") != std::string::npos;
    CHECK((forward || back));
    CHECK(f["recovery"].get<std::string>().find("forward gradients") != std::string::npos);
    injected += f["faults_injected"].get<int64_t>();
  }
  CHECK(failures == restarts);
  CHECK(injected >= restarts);
  CHECK(counted["faults_injected"] == injected);  // replays run clean
}

TEST_CASE("lockstep forward_gradient: a crashed stage rolls the run back to the last checkpoint") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs("petra-fg-crash-");
  REQUIRE(app::train_command({"tiny", fg_sets(dirs, "lockstep", "clean", {}), "", 0}) == 0);
  // Its phases end drained at every checkpoint (8 micro-batches): ticks count from each phase's start.
  REQUIRE(app::train_command(
              {"tiny", fg_sets(dirs, "lockstep", "crash", {"faults.crash_at_tick=[-1,-1,5,-1]"}), "", 0}) ==
          0);
  CHECK(differing(dirs.weights("clean"), dirs.weights("crash")) == 0);
  const auto failure = dirs.first_event("crash", "failure");
  CHECK(failure["kind"] == "injected crash");
  CHECK(failure["stage"] == 3);
  CHECK(failure["tick"] == 5);
  // Not rebuilt alone: its held guesses and the tangents in flight are not in any checkpoint.
  CHECK(failure["recovery"].get<std::string>().find("forward gradients") != std::string::npos);
  CHECK(failure["restored_from"] == "checkpoint");
  const nlohmann::json counted = dirs.summary("crash")["micro_batches"];
  CHECK(counted["restarts"] == 1);
  CHECK(counted["completed"] == 32);
  CHECK(counted["faults_injected"] == 1);
}

TEST_CASE("async forward_gradient under delays, slow stages and doubled messages: every micro-batch once") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* target : {"global", "local"}) {
    CAPTURE(target);
    config::run_config c = fg_tiny("async");
    c.training.forward_gradient.target = config::parse_choice<config::gradient_target>(target);
    c.faults.forward_delay = {2, 0, 1};
    c.faults.backward_delay = {3, 0, 2};
    c.faults.slow = {1, 2, 1, 1};
    c.faults.duplicate = {0.3, 0.3, 0.3, 0.3};
    const trained run = train_once(c);
    const int64_t count = run.totals.micro_batches;
    CHECK(count == 32);
    for (std::size_t j = 0; j < 4; ++j) {
      CAPTURE(j);
      CHECK(run.stages[j]["forwards"] == count);
      CHECK(run.stages[j]["backwards"] == count);
    }
    CHECK(sum_of(run.stages, "duplicates_discarded") == sum_of(run.stages, "injected_duplicates"));
    CHECK(total(run.totals.faults).delays > 0);
    CHECK(total(run.totals.faults).slowed > 0);
  }
}

TEST_CASE("async forward_gradient: a lost message stalls the phase, the rollback replays it, nothing lost") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs("petra-fg-async-drop-");
  REQUIRE(
      app::train_command(
          {"tiny", fg_sets(dirs, "async", "dropped", {"faults.drop=[0,0.1,0,0]", "faults.stall_seconds=1"}),
           "", 0}) == 0);
  const nlohmann::json counted = dirs.summary("dropped")["micro_batches"];
  CHECK(counted["restarts"].get<int64_t>() >= 1);
  CHECK(counted["completed"] == 32);
  CHECK(counted["lost"] == 0);
  for (const auto& f : dirs.events("dropped", "failure")) {
    MESSAGE("failure: " << f["what"]);
    CHECK(f["kind"] == "stall");
    CHECK(f["what"].get<std::string>().find("derivatives") != std::string::npos);
  }
}

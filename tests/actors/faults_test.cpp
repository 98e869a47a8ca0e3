// Fault injection (docs/design.md §6) and supervision: each kind changes what it should, and a run
// that loses a stage rolls back, replays and, in lockstep, ends bit-identical to a clean run.
#include <filesystem>
#include <fstream>

#include "app/commands.hpp"
#include "tests/actors/node_process.hpp"
#include "tests/actors/run_dirs.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
using petra::app::train_command;
namespace fs = std::filesystem;

namespace {}  // namespace

TEST_CASE("lockstep link delays: d extra ticks on stage j's backward link raise its delay by d") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("lockstep", "petra");
  const trained clean = train_once(c);
  c.faults.backward_delay = {0, 3, 0};  // the link stage 3 → stage 2
  c.faults.forward_delay = {0, 0, 2};   // the link stage 3 → stage 4
  const trained delayed = train_once(c);
  const auto& a = clean.stages;
  const auto& b = delayed.stages;
  CHECK(only_delay(b[3]) == only_delay(a[3]));          // the head: forward, loss, backward in one tick
  CHECK(only_delay(b[2]) == only_delay(a[2]) + 2);      // stage 3: its forward link
  CHECK(only_delay(b[1]) == only_delay(a[1]) + 2 + 3);  // stage 2: both
  CHECK(only_delay(b[0]) == only_delay(a[0]) + 2 + 3);
  CHECK(delayed.totals.micro_batches == clean.totals.micro_batches);
}

TEST_CASE("duplicates are discarded by the receiver and change nothing") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("lockstep", "petra");
  const trained clean = train_once(c);
  c.faults.duplicate = {0.5, 0.5, 0.5, 0.5};
  const trained doubled = train_once(c);
  int64_t injected = 0, discarded = 0;
  for (const auto& s : doubled.stages) {
    injected += s.value("injected_duplicates", int64_t{0});
    discarded += s.value("duplicates_discarded", int64_t{0});
  }
  CHECK(injected > 10);
  CHECK(discarded == injected);
  CHECK(differing(clean, doubled) == 0);
  // Every duplicate is one fault, seen by the trainer loop through the phase's counts.
  CHECK(total(doubled.totals.faults).duplicates == injected);
}

TEST_CASE("async reorder and jitter: messages overtake each other, the run completes in order") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("async", "petra");
  c.faults.reorder = {0.3, 0.3, 0.3, 0.3};
  c.faults.jitter_ms = {2, 2, 2, 2};
  const trained run = train_once(c);
  int64_t reorders = 0;
  for (const auto& s : run.stages) reorders += s.value("injected_reorders", int64_t{0});
  CHECK(reorders > 5);
  CHECK(run.totals.micro_batches == 64);
  CHECK(run.stages[0]["backwards"].get<int64_t>() >= 64);
}

TEST_CASE("a slow stage slows every computation of its own and of no other stage") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config c = tiny_config("lockstep", "petra");
  const trained clean = train_once(c);
  c.faults.slow = {1, 3, 1, 1};
  const trained slow = train_once(c);
  for (std::size_t j = 0; j < 4; ++j) {
    INFO("stage " << j + 1);
    const auto& s = slow.stages[j];
    const int64_t computations = s["forwards"].get<int64_t>() + s["backwards"].get<int64_t>();
    CHECK(slow.totals.faults[j].slowed == (j == 1 ? computations : 0));
  }
  CHECK(differing(clean, slow) == 0);  // slower, not different
}

TEST_CASE("crash at a tick: rollback to the last checkpoint, replay, bit-identical to a clean run") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  REQUIRE(train_command({"tiny", dirs.sets("clean", {}), "", 0}) == 0);
  // Snapshots every 8 micro-batches (ticks 8, 16, 24): tick 4 comes before the first.
  REQUIRE(train_command({"tiny",
                         dirs.sets("crash", {"faults.crash_at_tick=[-1,-1,4,-1]", "faults.recovery=global"}),
                         "", 0}) == 0);
  CHECK(differing(dirs.weights("clean"), dirs.weights("crash")) == 0);
  const auto summary = dirs.summary("crash");
  CHECK(summary["micro_batches"]["restarts"] == 1);
  CHECK(summary["micro_batches"]["replayed"] == 32);
  CHECK(summary["micro_batches"]["completed"] == 32);
  CHECK(dirs.first_event("crash", "failure")["restored_from"] == "checkpoint");
  CHECK(summary["micro_batches"]["faults_injected"] == 1);  // the crash, in the attempt that failed
  const auto failure = dirs.first_event("crash", "failure");
  CHECK(failure["kind"] == "injected crash");
  CHECK(failure["stage"] == 3);
  CHECK(failure["tick"] == 4);
  CHECK(failure["faults_injected"] == 1);
}

TEST_CASE("crash after a snapshot: rollback to the snapshot, replay from it, bit-identical to a clean run") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  // With AdamW too: the snapshot carries both moments and the step count its bias corrections use.
  for (const std::string optimizer : {"sgd", "adamw"}) {
    CAPTURE(optimizer);
    const std::vector<std::string> chosen = {"training.optimizer.kind=" + optimizer};
    std::vector<std::string> crashing = {"faults.crash_at_tick=[-1,-1,20,-1]", "faults.recovery=global"};
    crashing.insert(crashing.end(), chosen.begin(), chosen.end());
    const std::string clean = "clean-" + optimizer, crash = "crash-" + optimizer;
    REQUIRE(train_command({"tiny", dirs.sets(clean, chosen), "", 0}) == 0);
    REQUIRE(train_command({"tiny", dirs.sets(crash, crashing), "", 0}) == 0);
    CHECK(differing(dirs.weights(clean), dirs.weights(crash)) == 0);
    const auto summary = dirs.summary(crash);
    const auto failure = dirs.first_event(crash, "failure");
    CHECK(failure["restored_from"] == "snapshot");
    CHECK(summary["micro_batches"]["restarts"] == 1);
    CHECK(summary["micro_batches"]["replayed"] == 16);  // from the snapshot before micro-batch 16
    CHECK(summary["micro_batches"]["completed"] == 32);
    // Stage 1 finished micro-batches 0..9 before tick 16 (each is back 2(J − 1) = 6 ticks after it
    // entered): kept; those it finished from tick 16 to the crash are undone.
    CHECK(summary["micro_batches"]["rolled_back"] == failure["completed_before_failure"].get<int64_t>() - 10);
  }
}

TEST_CASE("each stage's crash fires once per run, also after another stage's global rollback") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  // Two phases (each epoch ends drained); ticks count from 0 in each. Stage 3 throws at tick 4 of
  // epoch 1 (the rollback's replay injects nothing), stage 2 at tick 10 of epoch 2.
  const std::vector<std::string> two_phases = {"training.epochs=2", "training.drain_at_epoch_end=true"};
  REQUIRE(train_command({"tiny", dirs.sets("clean", two_phases), "", 0}) == 0);
  auto both = two_phases;
  both.insert(both.end(), {"faults.crash_at_tick=[-1,10,4,-1]", "faults.recovery=global"});
  REQUIRE(train_command({"tiny", dirs.sets("both", both), "", 0}) == 0);
  const auto failures = dirs.events("both", "failure");
  REQUIRE(failures.size() == 2);  // before: stage 2's crash was disarmed by stage 3's
  CHECK(failures[0]["stage"] == 3);
  CHECK(failures[0]["epoch"] == 1);
  CHECK(failures[1]["stage"] == 2);
  CHECK(failures[1]["epoch"] == 2);
  CHECK(failures[1]["tick"] == 10);
  const auto summary = dirs.summary("both");
  CHECK(summary["micro_batches"]["restarts"] == 2);
  CHECK(summary["micro_batches"]["faults_injected"] == 2);
  CHECK(differing(dirs.weights("clean"), dirs.weights("both")) == 0);
}

TEST_CASE("faults.max_restarts bounds the recoveries of one phase, rollbacks and stage-local ones together") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  // Epoch 1: stage 2 loses its forwards of ticks 5-7, the stall rolls the phase back (the replay
  // injects nothing, so stage 2 never reaches its crash there). Epoch 2 (a phase of its own): stage 2
  // throws at tick 20, after the snapshot at 16: rebuilt alone. With one recovery allowed, the second
  // phase still has it (before: the first phase's rollback used it up, the stage-local recovery was
  // refused and the phase rolled back instead).
  REQUIRE(
      train_command({"tiny",
                     dirs.sets("phases", {"training.epochs=2", "training.drain_at_epoch_end=true",
                                          "faults.crash_at_tick=[-1,20,-1,-1]", "faults.drop_burst=[0,3,0,0]",
                                          "faults.drop_burst_at_tick=[-1,5,-1,-1]", "faults.stall_seconds=1",
                                          "faults.max_restarts=1"}),
                     "", 0}) == 0);
  const auto failures = dirs.events("phases", "failure");
  REQUIRE(failures.size() == 2);
  CHECK(failures[0]["kind"] == "stall");
  CHECK(failures[0]["epoch"] == 1);
  CHECK(failures[0]["recovery"].get<std::string>().rfind("global", 0) == 0);
  CHECK(failures[1]["stage"] == 2);
  CHECK(failures[1]["epoch"] == 2);
  CHECK(failures[1]["recovery"] == "local");
  const auto summary = dirs.summary("phases");
  CHECK(summary["micro_batches"]["restarts"] == 1);
  CHECK(summary["micro_batches"]["local_recoveries"] == 1);

  // One phase, two failures, one recovery allowed: stage 3 is rebuilt alone at tick 20, stage 2's
  // crash at tick 28 ends the run (exit code 1), neither rebuilt nor rolled back: its failure line
  // says the run gave up, and the summary that it failed.
  CHECK(train_command({"tiny",
                       dirs.sets("one", {"faults.crash_at_tick=[-1,28,20,-1]", "faults.max_restarts=1"}), "",
                       0}) == 1);
  const auto once = dirs.events("one", "failure");
  REQUIRE(once.size() == 2);
  CHECK(once[0]["recovery"] == "local");
  CHECK(once[1]["stage"] == 2);
  CHECK(once[1]["recovery"] == "none");
  CHECK(once[1]["gave_up"] == "faults.max_restarts (1) recoveries of this phase made already");
  CHECK(dirs.summary("one")["status"] == "failed");
}

TEST_CASE("a dropped message stalls the phase, the stall is noticed and the phase replayed") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  REQUIRE(train_command({"tiny", dirs.sets("clean", {}), "", 0}) == 0);
  REQUIRE(train_command({"tiny", dirs.sets("dropped", {"faults.drop=[0,0.05,0,0]", "faults.stall_seconds=1"}),
                         "", 0}) == 0);
  CHECK(differing(dirs.weights("clean"), dirs.weights("dropped")) == 0);
  const auto summary = dirs.summary("dropped");
  const int64_t restarts = summary["micro_batches"]["restarts"].get<int64_t>();
  CHECK(restarts >= 1);
  CHECK(summary["micro_batches"]["completed"] == 32);
  // Every drop counted, in the failed attempts too: each failure line holds its attempt's faults.
  int64_t failures = 0, dropped_in_failures = 0;
  for (const auto& f : dirs.events("dropped", "failure")) {
    ++failures;
    CHECK(f["kind"] == "stall");
    // Stage 2 drops on both its links: the stage that waits for the lost message is named.
    const std::string what = f["what"].get<std::string>();
    if (f["stage"] == 3)
      CHECK(what.find("lost on the link 2 -> 3") != std::string::npos);
    else
      CHECK((f["stage"] == 1 && what.find("lost on the link 2 -> 1") != std::string::npos));
    dropped_in_failures += f["faults_injected"].get<int64_t>();
  }
  CHECK(failures == restarts);
  CHECK(dropped_in_failures >= restarts);
  CHECK(summary["micro_batches"]["faults_injected"] == dropped_in_failures);  // replays run clean
}

TEST_CASE("SIGKILL of a node mid-run: detected, its stage moves to the spare node, the run completes") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  node_process doomed, spare;
  const auto killed =
      dirs.sets("killed", {"pipeline.nodes=[local," + doomed.address() + ",local,local]",
                           "pipeline.spare_nodes=[" + spare.address() + "]",
                           "faults.kill_node=[" + doomed.address() + "@0.3]", "data.train_limit=8192",
                           "training.epochs=1", "faults.recovery=global"});
  REQUIRE(train_command({"tiny", killed, "", 0}) == 0);
  CHECK(doomed.wait_signal() == SIGKILL);  // a real SIGKILL, not an orderly exit
  const auto summary = dirs.summary("killed");
  CHECK(summary["micro_batches"]["restarts"].get<int64_t>() >= 1);
  CHECK(summary["micro_batches"]["completed"].get<int64_t>() == 8192 / 8);
  CHECK(summary["micro_batches"]["faults_injected"].get<int64_t>() >= 1);  // the kill
  const auto failure = dirs.first_event("killed", "failure");
  MESSAGE("failure: " << failure["what"] << ", recovered in " << failure["recovery_seconds"] << " s");
  CHECK(failure["kind"] == "lost actor");
  CHECK(failure["stage"] == 2);
}

TEST_CASE("SIGKILL of a node with two stages: only they are rebuilt on the spare, nothing else goes back") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const std::string mode : {"async", "lockstep"}) {
    CAPTURE(mode);
    run_dirs dirs;
    node_process doomed, spare;
    // No snapshots (the one epoch is the run): the two stages start again from the checkpoint the
    // run began with.
    const auto killed =
        dirs.sets("killed", {"runtime.mode=" + mode, "output.checkpoint_every_steps=0",
                             "pipeline.nodes=[local," + doomed.address() + "," + doomed.address() + ",local]",
                             "pipeline.spare_nodes=[" + spare.address() + "]",
                             "faults.kill_node=[" + doomed.address() + "@0.3]", "data.train_limit=8192",
                             "training.epochs=1"});
    REQUIRE(train_command({"tiny", killed, "", 0}) == 0);
    CHECK(doomed.wait_signal() == SIGKILL);
    const auto failure = dirs.first_event("killed", "failure");
    MESSAGE("failure: " << failure.dump());
    CHECK(failure["kind"] == "lost actor");
    CHECK(failure["recovery"] == "local");
    CHECK(failure["stages_rebuilt"] == nlohmann::json::array({2, 3}));
    CHECK(failure["restored_from"] == "checkpoint");
    const auto summary = dirs.summary("killed");
    const nlohmann::json& counted = summary["micro_batches"];
    CHECK(counted["restarts"] == 0);
    CHECK(counted["local_recoveries"] == 1);
    CHECK(counted["lost"] == failure["lost_micro_batches"]);
    CHECK(counted["completed"].get<int64_t>() + counted["lost"].get<int64_t>() == 8192 / 8);
    CHECK(counted["faults_injected"].get<int64_t>() >= 1);  // the kill
    // What was lost in flight went again (lockstep: after the planned ticks): every micro-batch completed.
    CHECK(counted["lost"] == 0);
    CHECK(counted["reissued"] == failure["reissued_micro_batches"]);
    CHECK(counted["completed"] == 8192 / 8);
  }
}

TEST_CASE("lockstep: a crashed stage is rebuilt alone from its snapshot while the others keep their state") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_dirs dirs;
  for (const std::string order : {"forward_first", "backward_first"}) {  // training.tick_order
    CAPTURE(order);
    const std::string run = "crash-" + order;
    // Snapshots before ticks 8, 16, 24: stage 3 throws at tick 20 and starts again from the one at 16.
    REQUIRE(
        train_command({"tiny",
                       dirs.sets(run, {"faults.crash_at_tick=[-1,-1,20,-1]", "training.tick_order=" + order}),
                       "", 0}) == 0);
    const auto failure = dirs.first_event(run, "failure");
    MESSAGE("failure: " << failure.dump());
    // The rest reads keys only a local recovery's event has. (Local depends on the order in which
    // the stages before the lost one are told: see actors/local_recovery.cpp.)
    REQUIRE(failure["kind"] == "injected crash");
    REQUIRE(failure["recovery"] == "local");
    CHECK(failure["stages_rebuilt"] == nlohmann::json::array({3}));
    CHECK(failure["restored_from"] == "snapshot");
    // What stage 2 had sent on and not had back is re-issued after the planned ticks (stage 2 at
    // tick 21 at most, the loader at most 7 credits ahead of stage 1: ticks 32 + 2(J − 1) leave room).
    const int64_t reissued = failure["reissued_micro_batches"].get<int64_t>();
    CHECK(reissued >= 1);
    CHECK(reissued <= 2 * (4 - 2) + 1);
    CHECK(failure["lost_micro_batches"] == 0);
    const auto summary = dirs.summary(run);
    const nlohmann::json& counted = summary["micro_batches"];
    CHECK(counted["restarts"] == 0);
    CHECK(counted["local_recoveries"] == 1);
    CHECK(counted["lost"] == 0);
    CHECK(counted["reissued"] == reissued);
    CHECK(counted["completed"] == 32);
    CHECK(counted["faults_injected"] == 1);
    const auto epoch = dirs.first_event(run, "epoch");
    const auto steps = [&](std::size_t j) { return epoch["stages"][j]["weight_version"].get<int64_t>(); };
    CHECK(steps(2) < steps(1));  // stage 3 lost the steps it took after tick 16; its neighbours kept theirs
    CHECK(steps(2) < steps(3));
  }
}

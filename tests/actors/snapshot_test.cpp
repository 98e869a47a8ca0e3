// Snapshots without a drain: a run stopped right after a snapshot (or killed at any point) and
// resumed from it ends bit-identical to the uninterrupted run, with the same epoch lines.
#include "training/snapshot.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "app/commands.hpp"
#include "tests/actors/metrics_lines.hpp"
#include "tests/actors/node_process.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> base_sets(const fs::path& dir, const std::string& mode, const std::string& method) {
  std::vector<std::string> sets = {"runtime.mode=" + mode,
                                   "training.epochs=2",
                                   "data.train_limit=256",
                                   "data.test_limit=64",
                                   "output.dir=" + dir.string(),
                                   "output.checkpoint_every_steps=5",
                                   "pipeline.stage_blocks=[1,2,1,1]",
                                   "output.metrics_every_steps=2"};
  const auto plus = method.find('+');
  sets.push_back("training.method=" + method.substr(0, plus));
  if (method.find("+inputs") != std::string::npos) sets.push_back("training.stash_inputs=true");
  if (method.find("+weights") != std::string::npos) sets.push_back("training.stash_weights=true");
  return sets;
}

/// The epoch lines without what depends on the clock.
std::vector<nlohmann::json> epoch_lines(const fs::path& run) {
  std::vector<nlohmann::json> out;
  for (nlohmann::json& j : event_lines(run, "epoch"))
    out.push_back({j["epoch"], j["train_loss"], j["train_accuracy"], j["test_loss"], j["test_accuracy"]});
  return out;
}

/// Every stage ran each of the 32 micro-batches of both epochs forward and backward once. (A
/// stage's epoch record ends with the epoch's last backward: in async, forwards of the next
/// epoch run before it, so only the two epochs' forwards add up to 64.)
void check_every_micro_batch_once(const fs::path& run) {
  const auto epochs = event_lines(run, "epoch");
  REQUIRE(epochs.size() == 2);
  REQUIRE(epochs[0]["stages"].size() == 4);
  REQUIRE(epochs[1]["stages"].size() == 4);
  for (std::size_t j = 0; j < 4; ++j) {
    const nlohmann::json &first = epochs[0]["stages"][j], &second = epochs[1]["stages"][j];
    CHECK(first["forwards"].get<int64_t>() + second["forwards"].get<int64_t>() == 64);
    CHECK(first["backwards"] == 32);
    CHECK(second["backwards"] == 32);
  }
}

trained final_weights(const fs::path& run) {
  trained t;
  t.weights = load_safetensors((run / "checkpoint.safetensors").string()).tensors;
  return t;
}

void stop_and_resume(const std::string& mode, const std::string& method, int stop_after,
                     const std::vector<std::string>& extra = {}) {
  const fs::path dir = fs::temp_directory_path() /
                       ("petra-snapshot-" + std::to_string(::getpid()) + "-" + std::to_string(stop_after));
  fs::remove_all(dir);
  auto sets = base_sets(dir, mode, method);
  sets.insert(sets.end(), extra.begin(), extra.end());
  petra::train_options straight{"tiny", sets, "", 0};
  straight.sets.push_back("output.name=straight");
  REQUIRE(app::train_command(straight) == 0);

  petra::train_options first{"tiny", sets, "", 0};
  first.sets.push_back("output.name=stopped");
  first.stop_after_snapshots = stop_after;
  REQUIRE(app::train_command(first) == 0);
  REQUIRE(fs::exists(snapshot_manifest((dir / "stopped").string())));
  // A process killed a little after the snapshot would have logged a step line past it: add the
  // uninterrupted run's next one (a millisecond after the stopped run's last), which the resumed
  // run must not log again.
  {
    const auto logged = event_lines(dir / "stopped", "step");
    const int64_t done = logged.empty() ? 0 : logged.back()["step"].get<int64_t>();
    for (nlohmann::json j : event_lines(dir / "straight", "step"))
      if (j["step"].get<int64_t>() > done) {
        j["seconds"] = (logged.empty() ? 0.0 : logged.back()["seconds"].get<double>()) + 1e-3;
        std::ofstream(dir / "stopped" / "metrics.jsonl", std::ios::app) << j.dump() << "\n";
        break;
      }
  }
  petra::train_options resume{"", {}, (dir / "stopped").string(), 0};
  REQUIRE(app::train_command(resume) == 0);

  CHECK(differing(final_weights(dir / "straight"), final_weights(dir / "stopped")) == 0);
  const auto a = epoch_lines(dir / "straight"), b = epoch_lines(dir / "stopped");
  CHECK(a.size() == 2);
  CHECK(a == b);
  check_step_lines(dir / "straight", dir / "stopped");
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE("simulate: stop right after a snapshot, resume = uninterrupted, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  // Cuts every 10 micro-batches and at the epoch end (32): the 3rd falls inside epoch 1, the 4th
  // at its end (its evaluation wave still in flight), the 6th inside epoch 2.
  for (const char* method : {"petra", "delayed+weights", "delayed+inputs+weights"})
    for (int stop : {3, 4, 6}) {
      CAPTURE(method);
      CAPTURE(stop);
      stop_and_resume("simulate", method, stop);
    }
}

TEST_CASE("simulate: backprop snapshots between micro-batches and resumes bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  stop_and_resume("simulate", "backprop", 3);
}

TEST_CASE("a run killed (SIGKILL) while it snapshots resumes from the last whole snapshot, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-snapshot-kill-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "simulate", "petra");
  sets.push_back("output.checkpoint_every_steps=1");  // a snapshot every other micro-batch
  sets.push_back("data.train_limit=1024");
  petra::train_options straight{"tiny", sets, "", 0};
  straight.sets.push_back("output.name=straight");
  REQUIRE(app::train_command(straight) == 0);

  // Kill the same run in another process soon after its first snapshot, wherever it stands then
  // (possibly inside the next snapshot's write).
  const fs::path run = dir / "killed";
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<std::string> args = {petra_binary(), "train", "tiny", "--set", "output.name=killed"};
    for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!fs::exists(snapshot_manifest(run.string())) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE_MESSAGE(WIFSIGNALED(status), "the run ended before it was killed: make it longer");
  REQUIRE(fs::exists(snapshot_manifest(run.string())));

  petra::train_options resume{"", {}, run.string(), 0};
  REQUIRE(app::train_command(resume) == 0);
  CHECK(differing(final_weights(dir / "straight"), final_weights(run)) == 0);
  CHECK(epoch_lines(dir / "straight") == epoch_lines(run));
  fs::remove_all(dir);
}

TEST_CASE("lockstep: stop right after a snapshot, resume = uninterrupted, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* method : {"petra", "delayed+weights", "delayed+inputs+weights", "backprop"})
    for (int stop : {3, 4, 6}) {
      CAPTURE(method);
      CAPTURE(stop);
      stop_and_resume("lockstep", method, stop);
    }
}

TEST_CASE("tick order backward_first: stop right after a snapshot, resume = uninterrupted, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* mode : {"simulate", "lockstep"})
    for (const char* method : {"petra", "delayed+inputs+weights"})
      for (int stop : {3, 4}) {
        CAPTURE(mode);
        CAPTURE(method);
        CAPTURE(stop);
        stop_and_resume(mode, method, stop, {"training.tick_order=backward_first"});
      }
}

TEST_CASE("lockstep with snapshots = simulate with snapshots, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-snapshot-eq-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const char* mode : {"simulate", "lockstep"}) {
    petra::train_options run{"tiny", base_sets(dir, mode, "petra"), "", 0};
    run.sets.push_back(std::string("output.name=") + mode);
    REQUIRE(app::train_command(run) == 0);
  }
  CHECK(differing(final_weights(dir / "simulate"), final_weights(dir / "lockstep")) == 0);
  CHECK(epoch_lines(dir / "simulate") == epoch_lines(dir / "lockstep"));
  // The step lines stand at the same place in the stream: step s ended by micro-batch k·s.
  const auto a = event_lines(dir / "simulate", "step"), b = event_lines(dir / "lockstep", "step");
  REQUIRE(a.size() == 16);  // 2 epochs of 16 steps, a line every 2 steps
  REQUIRE(b.size() == a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(b[i]["step"] == a[i]["step"]);
    CHECK(a[i]["micro_batches"].get<int64_t>() == 2 * a[i]["step"].get<int64_t>());
    CHECK(b[i]["micro_batches"] == a[i]["micro_batches"]);
    CHECK(b[i]["epoch"] == a[i]["epoch"]);
  }
  fs::remove_all(dir);
}

TEST_CASE("lockstep with a stage on a petra node: stop after a snapshot, resume = one process straight") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-snapshot-node-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  node_process node;
  const auto sets = base_sets(dir, "lockstep", "petra");
  petra::train_options straight{"tiny", sets, "", 0};
  straight.sets.push_back("output.name=straight");
  REQUIRE(app::train_command(straight) == 0);
  // Stage 2's part of every cut crosses the network to the coordinator and back on resume.
  petra::train_options first{"tiny", sets, "", 0};
  first.sets.push_back("output.name=stopped");
  first.sets.push_back("pipeline.nodes=[local," + node.address() + ",local,local]");
  first.stop_after_snapshots = 4;
  REQUIRE(app::train_command(first) == 0);
  petra::train_options resume{"", {}, (dir / "stopped").string(), 0};
  REQUIRE(app::train_command(resume) == 0);
  CHECK(differing(final_weights(dir / "straight"), final_weights(dir / "stopped")) == 0);
  CHECK(epoch_lines(dir / "straight") == epoch_lines(dir / "stopped"));
  fs::remove_all(dir);
}

// Async takes its snapshots without a drain too (Chandy–Lamport markers, DESIGN.md §4). With one
// credit the async schedule is one message at a time, so the resumed run must equal the
// uninterrupted one bit for bit; the markers still overtake nothing (the last stage awaits the
// loss when the marker reaches it, so its part records the loss actor's answer).
TEST_CASE("async, one credit: stop right after a snapshot, resume = uninterrupted, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* method : {"petra", "delayed+inputs+weights"})
    for (int stop : {3, 4, 6}) {
      CAPTURE(method);
      CAPTURE(stop);
      stop_and_resume("async", method, stop, {"runtime.credits=1"});
    }
  stop_and_resume("async", "backprop", 3);  // one micro-batch in flight: its credits are 1 anyway
  // Stages on simulated devices: the queued and recorded messages cross the hand-over to the host.
  stop_and_resume("async", "petra", 4, {"runtime.credits=1", "pipeline.devices=[sim:0,sim:0,sim:1,cpu]"});
}

TEST_CASE("async, 2J - 1 credits: resumed from a snapshot, every micro-batch runs once at every stage") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-snapshot-async-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto sets = base_sets(dir, "async", "petra");
  // Cuts before micro-batches 10, 20, 30, 32 (the epoch end, its markers close behind those of
  // 30: the two cuts overlap at every stage), 40, ...
  for (const auto& [stop, position] : {std::pair{2, 20}, {4, 32}, {5, 40}}) {
    CAPTURE(stop);
    const std::string name = "stopped-" + std::to_string(stop);
    petra::train_options first{"tiny", sets, "", 0};
    first.sets.push_back("output.name=" + name);
    first.stop_after_snapshots = stop;
    REQUIRE(app::train_command(first) == 0);
    CHECK(read_snapshot((dir / name).string(), 4).metadata.at("global_position") == std::to_string(position));
    // An async cut does not resume on the tick schedule: refused as bad input, nothing run.
    petra::train_options other{"", {"runtime.mode=lockstep"}, (dir / name).string(), 0};
    CHECK(app::train_command(other) == 2);
    petra::train_options resume{"", {}, (dir / name).string(), 0};
    REQUIRE(app::train_command(resume) == 0);
    check_every_micro_batch_once(dir / name);
    CHECK(epoch_lines(dir / name).size() == 2);
  }
  fs::remove_all(dir);
}

TEST_CASE(
    "async: a crashed stage rolls back to the last snapshot, not the checkpoint, and every micro-batch runs "
    "once") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-snapshot-crash-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "async", "petra");
  // Stage 3 throws at its forward of micro-batch 50 (inside epoch 2). The cut before 40 is whole by
  // then: with 2J − 1 = 7 credits, 50 enters only after 43 finished at stage 1, and every part of
  // that cut went out before 40's backward passed its stage. The cut before 50 may be whole too:
  // stage 3 takes its part before it forwards 50, and when its window (3 awaiting backward) is full
  // it waits for a backward, so the rest of that cut can complete first.
  sets.push_back("faults.crash_at_tick=[-1,-1,50,-1]");
  sets.push_back("faults.recovery=global");
  sets.push_back("output.name=crashed");
  petra::train_options run{"tiny", sets, "", 0};
  REQUIRE(app::train_command(run) == 0);
  const auto failures = event_lines(dir / "crashed", "failure");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["recovery"] == "global");
  CHECK(failures[0]["restored_from"] == "snapshot");
  const int64_t replayed = failures[0]["replayed_micro_batches"].get<int64_t>();
  CHECK_MESSAGE((replayed == 64 - 40 || replayed == 64 - 50), replayed);  // from a cut, not from 32
  check_every_micro_batch_once(dir / "crashed");
  fs::remove_all(dir);
}

TEST_CASE(
    "async: a crashed stage is rebuilt alone from its snapshot; the others keep their state, every "
    "micro-batch is completed or counted lost") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-local-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const std::string method : {"petra", "delayed+inputs+weights"}) {
    CAPTURE(method);
    auto sets = base_sets(dir, "async", method);
    // Snapshots at epoch ends only: stage 3 throws at its forward of micro-batch 45, long after the
    // cut before 32 was whole (its markers passed every stage before 32 did) and before the next.
    sets.push_back("output.checkpoint_every_steps=0");
    sets.push_back("faults.crash_at_tick=[-1,-1,45,-1]");
    sets.push_back("output.name=" + method);
    petra::train_options run{"tiny", sets, "", 0};
    REQUIRE(app::train_command(run) == 0);
    const auto failures = event_lines(dir / method, "failure");
    REQUIRE(failures.size() == 1);
    CHECK(failures[0]["recovery"] == "local");
    CHECK(failures[0]["stages_rebuilt"] == nlohmann::json::array({3}));
    CHECK(failures[0]["restored_from"] == "snapshot");
    const int64_t lost = failures[0]["lost_micro_batches"].get<int64_t>();
    CHECK(lost >= 1);
    CHECK(lost <= 7);  // at most the 2J − 1 credits were in flight
    const auto summary = event_lines(dir / method, "summary");
    REQUIRE(summary.size() == 1);
    const nlohmann::json& counted = summary[0]["micro_batches"];
    CHECK(counted["completed"].get<int64_t>() + counted["lost"].get<int64_t>() == 64);
    CHECK(counted["lost"] == lost);
    CHECK(counted["local_recoveries"] == 1);
    CHECK(counted["restarts"] == 0);
    CHECK(counted["replayed"] == 0);
    const auto epochs = event_lines(dir / method, "epoch");
    REQUIRE(epochs.size() == 2);
    // Stage 3 went back to its state before micro-batch 32 and lost the steps it took after it;
    // stages 2 and 4 kept theirs.
    const auto steps = [&](std::size_t j) { return epochs[1]["stages"][j]["weight_version"].get<int64_t>(); };
    CHECK(steps(2) < steps(1));
    CHECK(steps(2) < steps(3));
  }
  fs::remove_all(dir);
}

TEST_CASE("async: a snapshot in progress when a stage is lost is given up; the next one is taken") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-local-cut-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "async", "petra");  // snapshots before 10, 20, 30, 32, 40, 50, 60
  // Stage 3 takes its part of the cut before 50 and throws at the forward of 50 right behind it:
  // that cut cannot complete.
  sets.push_back("faults.crash_at_tick=[-1,-1,50,-1]");
  sets.push_back("output.name=cut");
  petra::train_options run{"tiny", sets, "", 0};
  REQUIRE(app::train_command(run) == 0);
  const auto failures = event_lines(dir / "cut", "failure");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["recovery"] == "local");
  CHECK(failures[0]["restored_from"] == "snapshot");
  const nlohmann::json counted = event_lines(dir / "cut", "summary").at(0)["micro_batches"];
  CHECK(counted["completed"].get<int64_t>() + counted["lost"].get<int64_t>() == 64);
  CHECK(counted["restarts"] == 0);
  // The snapshot after the recovery was taken, whole.
  CHECK(read_snapshot((dir / "cut").string(), 4).metadata.at("global_position") == "60");
  fs::remove_all(dir);
}

TEST_CASE("async: a lost stage 1 is not rebuilt alone: the run rolls back, saying why") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-local-first-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = base_sets(dir, "async", "petra");
  sets.push_back("faults.crash_at_tick=[50,-1,-1,-1]");
  sets.push_back("output.name=first");
  petra::train_options run{"tiny", sets, "", 0};
  REQUIRE(app::train_command(run) == 0);
  const auto failures = event_lines(dir / "first", "failure");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["recovery"].get<std::string>().find("stage 1 is lost") != std::string::npos);
  CHECK(failures[0]["completed_before_failure"].is_null());  // stage 1's count went with it
  check_every_micro_batch_once(dir / "first");
  // Those it had completed before the snapshot are counted from the snapshot.
  CHECK(event_lines(dir / "first", "summary").at(0)["micro_batches"]["completed"] == 64);
  fs::remove_all(dir);
}

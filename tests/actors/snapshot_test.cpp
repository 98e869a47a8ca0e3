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
#include "tests/actors/node_process.hpp"
#include "tests/actors/snapshot_runs.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

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

// Async takes its snapshots without a drain too (Chandy–Lamport markers, docs/design.md §4). With one
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

// `petra migrate` against a running `petra train` (a child process): the stage moves at the next
// drained point, the answer is a metrics line and the command's exit code 0, and the run ends
// bit-identical to the same run left in place; a request the trainer cannot honour is refused (exit
// 2) while training goes on; bad requests are refused with exit code 2 and nothing is asked.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "tests/actors/metrics_lines.hpp"
#include "tests/actors/runtime_fixture.hpp"
#include "tests/remote/child_process.hpp"
#include "training/migration.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

namespace fs = std::filesystem;

/// The tiny preset in lockstep, epochs of 8 micro-batches that drain at their ends: each end is a
/// point where a requested migration happens. (40 of them: the trainer, stopped as soon as it has
/// announced itself, is still far from its last when the request is posted.)
std::vector<std::string> run_sets(const fs::path& dir, const std::string& name, int epochs,
                                  const std::string& mode = "lockstep") {
  return {"runtime.mode=" + mode,
          "training.epochs=" + std::to_string(epochs),
          "data.train_limit=64",
          "data.test_limit=32",
          "output.dir=" + dir.string(),
          "output.name=" + name,
          "output.progress=false",
          "training.drain_at_epoch_end=true",
          "pipeline.stage_blocks=[1,2,1,1]"};
}

std::vector<std::string> train_argv(const std::vector<std::string>& sets) {
  std::vector<std::string> argv{std::string(PETRA_BINARY), "train", "tiny"};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  return argv;
}

/// Polls (bounded) until `done` holds; false when `limit` passed first.
template <class Done>
bool within(std::chrono::milliseconds limit, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

struct answered {
  int code = -1;
  std::string output;
};

/// Starts `petra train` with `sets`, stops it (SIGSTOP) once it announced itself in its run
/// directory, asks `petra migrate run --stage <stage> --to <to>`, lets the trainer go on once the
/// request is in place (so the request is there before any drained point it reaches), and returns the
/// command's exit code and output; the trainer must end with 0.
answered ask_running(const std::vector<std::string>& sets, const fs::path& run, int stage,
                     const std::string& to) {
  child_process trainer(train_argv(sets));
  REQUIRE_MESSAGE(
      within(120s, [&] { return fs::exists(trainer_pid_path(run.string())) || !trainer.alive(); }),
      "petra train did not start within 120 s");
  REQUIRE(::kill(trainer.pid(), SIGSTOP) == 0);
  REQUIRE(running_trainer(run.string()) == trainer.pid());
  child_process command({std::string(PETRA_BINARY), "migrate", run.string(), "--stage", std::to_string(stage),
                         "--to", to, "--timeout", "600"});
  const bool posted =
      within(120s, [&] { return fs::exists(migration_request_path(run.string())) || !command.alive(); });
  REQUIRE(::kill(trainer.pid(), SIGCONT) == 0);
  REQUIRE(posted);
  answered out;
  out.output = command.read_all(600s);
  out.code = command.wait_exit(10s).value_or(-1);
  const std::string trained = trainer.read_all(600s);
  CHECK_MESSAGE(trainer.wait_exit(10s) == 0, trained);
  CHECK_FALSE(fs::exists(trainer_pid_path(run.string())));  // gone with the trainer
  return out;
}

struct migrate_scratch {
  fs::path path = fs::temp_directory_path() / ("petra-migrate-command-" + std::to_string(::getpid()));
  migrate_scratch() { fs::remove_all(path); }
  ~migrate_scratch() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("petra migrate moves a stage of a running lockstep training, it ends as if left in place") {
  PETRA_REQUIRE_FASHION_MNIST();
  migrate_scratch dir;
  const answered a = ask_running(run_sets(dir.path, "moved", 40), dir.path / "moved", 2, "sim:0");
  CHECK_MESSAGE(a.code == 0, a.output);
  CHECK(a.output.find("stage 2 moved from cpu to sim:0") != std::string::npos);
  const auto lines = event_lines(dir.path / "moved", "migrate");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["stage"] == 2);
  CHECK(lines[0]["to"] == "sim:0");
  CHECK(lines[0]["request"].is_string());
  CHECK(lines[0]["position"].get<int64_t>() % 8 == 0);  // an epoch end: a drained point
  CHECK(lines[0]["bytes"].get<int64_t>() > 0);
  CHECK_FALSE(fs::exists(migration_request_path((dir.path / "moved").string())));
  petra::train_options still{"tiny", run_sets(dir.path, "still", 40), "", 0};
  REQUIRE(app::train_command(still) == 0);
  trained x, y;
  x.weights = load_safetensors((dir.path / "still" / "checkpoint.safetensors").string()).tensors;
  y.weights = load_safetensors((dir.path / "moved" / "checkpoint.safetensors").string()).tensors;
  CHECK(differing(x, y) == 0);
}

TEST_CASE("petra migrate: a target the trainer cannot reach is refused (exit 2) and training goes on") {
  PETRA_REQUIRE_FASHION_MNIST();
  migrate_scratch dir;
  const answered a =
      ask_running(run_sets(dir.path, "refused", 40), dir.path / "refused", 3, "cpu@127.0.0.1:1");
  CHECK(a.code == 2);
  CHECK_MESSAGE(
      a.output.find("the training refused: stage 3 cannot be placed at cpu@127.0.0.1:1") != std::string::npos,
      a.output);
  const auto lines = event_lines(dir.path / "refused", "migrate_refused");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["stage"] == 3);
  CHECK(event_lines(dir.path / "refused", "migrate").empty());
  CHECK(event_lines(dir.path / "refused", "epoch").size() == 40);
}

TEST_CASE("petra migrate: bad requests are refused with exit code 2 and nothing is asked") {
  PETRA_REQUIRE_FASHION_MNIST();
  migrate_scratch dir;
  petra::train_options done{"tiny", run_sets(dir.path, "done", 1), "", 0};
  REQUIRE(app::train_command(done) == 0);
  const std::string run = (dir.path / "done").string();
  auto refused = [&](const std::vector<std::string>& args, const std::string& says) {
    std::vector<std::string> argv{std::string(PETRA_BINARY), "migrate"};
    argv.insert(argv.end(), args.begin(), args.end());
    const child_result r = run_command(argv, 60s);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(says) != std::string::npos);
    CHECK_FALSE(fs::exists(migration_request_path(run)));
  };
  refused({run, "--stage", "2", "--to", "sim:0"}, "no training is running in");
  refused({run, "--stage", "9", "--to", "sim:0"}, "stage 9 is not in the pipeline, which has 4 stages");
  refused({run, "--stage", "2", "--to", "gpu:0"}, "'gpu:0' is not a target");
  refused({run, "--stage", "2", "--to", "cpu@nowhere"}, "nowhere");
  refused({(dir.path / "nothing").string(), "--stage", "2", "--to", "sim:0"}, "is not a run directory");
  refused({run, "--stage", "2"}, "--to is required");
  // A run that cannot migrate at all says so before asking.
  petra::train_options simulated{"tiny", run_sets(dir.path, "simulated", 1, "simulate"), "", 0};
  REQUIRE(app::train_command(simulated) == 0);
  refused({(dir.path / "simulated").string(), "--stage", "2", "--to", "sim:0"},
          "runtime.mode simulate has no stage actors to move");
}

TEST_CASE("petra migrate moves a stage of a running async training at a drained epoch end") {
  PETRA_REQUIRE_FASHION_MNIST();
  migrate_scratch dir;
  const answered a = ask_running(run_sets(dir.path, "moved", 40, "async"), dir.path / "moved", 3, "sim:1");
  CHECK_MESSAGE(a.code == 0, a.output);
  CHECK(a.output.find("stage 3 moved from cpu to sim:1") != std::string::npos);
  const auto lines = event_lines(dir.path / "moved", "migrate");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["stage"] == 3);
  CHECK(lines[0]["request"].is_string());
  CHECK(lines[0]["position"].get<int64_t>() % 8 == 0);  // an epoch end: a drained point
  CHECK(lines[0]["restored_checksum"] == lines[0]["checksum"]);
  const auto epochs = event_lines(dir.path / "moved", "epoch");
  REQUIRE(epochs.size() == 40);
  for (const auto& e : epochs)
    for (const auto& s : e["stages"]) CHECK(s["backwards"] == 8);
}

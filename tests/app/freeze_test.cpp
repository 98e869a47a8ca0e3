// A `petra train` whose whole process is stopped (SIGSTOP: a paused virtual machine, a debugger, a
// starved host) for longer than faults.stall_seconds and then continued is not a stall: no stage
// could make progress while it was stopped, and the run goes on without a rollback. A stall found
// only because the wait's wall-clock timer expired during the stop would roll the run back for
// nothing (training/awake_timer.hpp).
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/files.hpp"
#include "tests/remote/child_process.hpp"
#include "tests/skip.hpp"

using namespace std::chrono_literals;
using petra::testing::child_process;
using petra::testing::temp_dir;

namespace {

/// Trains the tiny preset in `mode` with a stall limit of 3 s, stops the whole process for 10 s once
/// its first epoch is written, continues it, and returns what it printed; it must end with 0.
std::string freeze_run(const std::string& mode, const temp_dir& dir) {
  const std::filesystem::path metrics = dir.path() / "runs" / mode / "metrics.jsonl";
  // $PETRA_BINARY where set (another build, e.g. one without the fix), else this build's.
  const char* binary = std::getenv("PETRA_BINARY");
  std::vector<std::string> argv{binary && *binary ? binary : PETRA_BINARY, "train", "tiny"};
  for (const std::string& s : {"runtime.mode=" + mode, std::string("training.epochs=40"),
                               std::string("data.train_limit=64"), std::string("data.test_limit=32"),
                               std::string("faults.stall_seconds=3"), std::string("output.progress=false"),
                               "output.dir=" + (dir.path() / "runs").string(), "output.name=" + mode})
    argv.insert(argv.end(), {"--set", s});
  child_process trainer(argv);
  const auto give_up = std::chrono::steady_clock::now() + 300s;
  while (petra::testing::file_text(metrics).find("\"event\":\"epoch\"") == std::string::npos &&
         trainer.alive() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(10ms);
  REQUIRE_MESSAGE(petra::testing::file_text(metrics).find("\"event\":\"epoch\"") != std::string::npos,
                  "no epoch line within 300 s");
  REQUIRE(::kill(trainer.pid(), SIGSTOP) == 0);
  // Still training when stopped: 40 epochs of 8 micro-batches take far longer than one.
  CHECK(petra::testing::file_text(metrics).find("\"event\":\"summary\"") == std::string::npos);
  std::this_thread::sleep_for(10s);  // > faults.stall_seconds
  REQUIRE(::kill(trainer.pid(), SIGCONT) == 0);
  const std::string printed = trainer.read_all(600s);
  CHECK_MESSAGE(trainer.wait_exit(10s) == 0, printed);
  return printed + petra::testing::file_text(metrics);  // the summary and any failure lines
}

}  // namespace

TEST_CASE("a petra train stopped longer than faults.stall_seconds and continued declares no stall") {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("the Fashion-MNIST files of dataset-fashion-mnist are not installed");
  for (const std::string mode : {"lockstep", "async"}) {
    CAPTURE(mode);
    temp_dir dir("petra-freeze");
    const std::string out = freeze_run(mode, dir);
    const auto stall = out.find("no progress for");
    CHECK_MESSAGE(stall == std::string::npos, out.substr(stall == std::string::npos ? 0 : stall, 400));
    CHECK(out.find("\"event\":\"failure\"") == std::string::npos);
    CHECK(out.find("\"restarts\":0,") != std::string::npos);  // the summary line: no rollback
  }
}

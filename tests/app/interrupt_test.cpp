// A Ctrl-C (SIGINT) or SIGTERM ends `petra train` with 128 + the signal and tells how to continue
// the run; the run directory it names is whole and `--resume` accepts it.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/petra_command.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Starts `petra args...` with its output in `log`, sends `signal` once it printed `ready`
/// (its first progress), and returns its wait status.
int interrupt_petra(const std::vector<std::string>& args, const fs::path& log, int signal,
                    const std::string& ready) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    std::vector<char*> argv;
    std::string binary = petra::testing::petra_binary();
    argv.push_back(binary.data());
    std::vector<std::string> copies = args;
    for (std::string& a : copies) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  // Generous on a loaded machine: the run is long (many epochs), the wait ends at `ready`.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (read_all(log).find(ready) == std::string::npos && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const bool was_ready = read_all(log).find(ready) != std::string::npos;
  ::kill(pid, signal);
  int status = 0;
  ::waitpid(pid, &status, 0);
  // Not a silent wait to the end: a `ready` that never comes means the output changed.
  REQUIRE_MESSAGE(was_ready, "\"" << ready << "\" not printed within 5 minutes:\n" << read_all(log));
  return status;
}

struct interrupt_scratch {
  fs::path path = fs::temp_directory_path() / ("petra-interrupt-" + std::to_string(::getpid()));
  interrupt_scratch() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~interrupt_scratch() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("Ctrl-C ends petra train with 130 and names the resume command, the run resumes") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("the Fashion-MNIST files of dataset-fashion-mnist are not installed");
  interrupt_scratch dir;
  const fs::path run = dir.path / "runs" / "interrupted";
  // ci_smoke for many epochs: still training when the signal comes; the first epoch line means the
  // run directory is written and its checkpoint exists.
  const int status =
      interrupt_petra({"train", "ci_smoke", "--set", "training.epochs=400", "--set",
                       "output.dir=" + (dir.path / "runs").string(), "--set", "output.name=interrupted"},
                      dir.path / "log.txt", SIGINT, "epoch 1/400");
  const std::string log = read_all(dir.path / "log.txt");
  INFO(log);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(log.find("petra train: interrupted; " + run.string()) != std::string::npos);
  CHECK(log.find("continue with: petra train --resume " + run.string()) != std::string::npos);
  CHECK(fs::exists(run / "checkpoint.safetensors"));
  CHECK(fs::exists(run / "config.yaml"));
  CHECK_FALSE(fs::exists(run / "train.pid"));  // it names a running trainer: gone with this one

  // The resumed run picks up the checkpoint and is itself interruptible (SIGTERM: 143).
  const int again =
      interrupt_petra({"train", "--resume", run.string()}, dir.path / "log2.txt", SIGTERM,
                      "(resuming ");  // "(resuming epoch N at ..." or "(resuming inside epoch N ..."
  const std::string log2 = read_all(dir.path / "log2.txt");
  INFO(log2);
  REQUIRE(WIFEXITED(again));
  CHECK(WEXITSTATUS(again) == 143);
  CHECK_FALSE(fs::exists(run / "train.pid"));
  CHECK(log2.find("continue with: petra train --resume " + run.string()) != std::string::npos);
}

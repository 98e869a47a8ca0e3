// Child processes for the remote tests: `petra node` and scripts, with every wait bounded and
// every child reaped (SIGTERM, then SIGKILL) when the handle goes out of scope.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace petra::testing {

using namespace std::chrono_literals;

/// A fresh temporary directory, removed with everything in it at scope exit.
class temp_dir {
 public:
  explicit temp_dir(const std::string& tag) {
    std::string pattern = (std::filesystem::temp_directory_path() / ("petra-" + tag + "-XXXXXX")).string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// argv[0] is the program; stdout comes back through a pipe, stderr goes to `stderr_path`
/// ("" = merged into stdout).
class child_process {
 public:
  explicit child_process(const std::vector<std::string>& argv, const std::string& stderr_path = "") {
    int out[2];
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);                     // its own process group: a script's children are stopped with it
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // and it is stopped when the test dies
      dup2(out[1], STDOUT_FILENO);
      if (stderr_path.empty()) {
        dup2(out[1], STDERR_FILENO);
      } else {
        const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (err >= 0) dup2(err, STDERR_FILENO);
      }
      close(out[0]);
      close(out[1]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(out[1]);
    out_ = out[0];
    REQUIRE(pid_ > 0);
  }
  ~child_process() {
    stop();
    if (out_ >= 0) close(out_);
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const { return pid_; }

  /// The next line of stdout (without '\n'); nullopt on EOF or when `timeout` passes.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        output_ += line + "\n";
        return line;
      }
      if (!fill(deadline)) return std::nullopt;
    }
  }

  /// Everything printed until the child closes stdout (or `timeout` passes).
  std::string read_all(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (fill(deadline)) {
    }
    output_ += buffer_;
    buffer_.clear();
    return output_;
  }

  /// The exit code once it exits within `timeout` (128 + signal when killed by one).
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    if (exit_code_) return exit_code_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
      }
      if (r < 0 || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(10ms);
    }
  }

  bool alive() { return !wait_exit(0ms); }

  /// SIGTERM to its process group; SIGKILL after `grace`. Always reaps.
  void stop(std::chrono::milliseconds grace = 5000ms) {
    if (pid_ <= 0 || exit_code_) return;
    kill(-pid_, SIGTERM);
    kill(pid_, SIGTERM);
    if (!wait_exit(grace)) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      wait_exit(10000ms);
    }
  }

 private:
  bool fill(std::chrono::steady_clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[4096];
    const ssize_t n = read(out_, chunk, sizeof chunk);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_, output_;
  std::optional<int> exit_code_;
};

/// Runs argv to completion within `timeout` (killed otherwise: exit code nullopt); output merged.
struct child_result {
  std::optional<int> exit_code;
  std::string output;
};
inline child_result run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  child_process child(argv);
  child_result r;
  r.output = child.read_all(timeout);
  r.exit_code = child.wait_exit(2000ms);
  return r;
}

/// A `petra node` child with the given extra flags; waits (bounded) for its "listening on" line.
class node_child {
 public:
  explicit node_child(const std::vector<std::string>& flags, const std::string& stderr_path = "")
      : process_(with_binary(flags), stderr_path) {
    const auto line = process_.read_line(20000ms);
    REQUIRE_MESSAGE(line.has_value(), "petra node printed nothing within 20 s");
    const auto at = line->find("listening on ");
    REQUIRE_MESSAGE(at != std::string::npos, "petra node said: " << *line);
    const std::string rest = line->substr(at + 13);
    const auto colon = rest.rfind(':');
    port_ = std::stoi(rest.substr(colon + 1));
    REQUIRE(port_ > 0);
  }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  child_process& process() { return process_; }

 private:
  static std::vector<std::string> with_binary(const std::vector<std::string>& flags) {
    std::vector<std::string> argv{PETRA_BINARY, "node"};
    if (std::find(flags.begin(), flags.end(), "--threads") == flags.end())
      argv.insert(argv.end(), {"--threads", "2"});
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
  }
  child_process process_;
  int port_ = 0;
};

/// The error of `x` as text, "" when it holds a value (doctest evaluates messages even of passing
/// checks under -s, and error() on a value is undefined).
template <class T>
std::string error_text(caf::actor_system& sys, const caf::expected<T>& x) {
  return x ? std::string{} : sys.render(x.error());
}

inline bool have_program(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace petra::testing

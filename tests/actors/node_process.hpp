// Starts `petra node --listen 127.0.0.1:0` as a child process and reads the port it bound; signals it
// (kill, stop, continue) and waits for its end.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/petra_command.hpp"

namespace petra::testing {

class node_process {
 public:
  node_process() {
    int out[2];
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      execl(petra_binary(), petra_binary(), "node", "--listen", "127.0.0.1:0", "--threads", "2", nullptr);
      _exit(127);
    }
    close(out[1]);
    FILE* from_child = fdopen(out[0], "r");
    char line[256] = {0};
    if (fgets(line, sizeof line, from_child)) {
      const std::string text(line);
      const auto colon = text.rfind(':');
      if (text.find("listening on") != std::string::npos && colon != std::string::npos)
        port_ = std::stoi(text.substr(colon + 1));
    }
    output_ = from_child;
    REQUIRE_MESSAGE(port_ > 0, "petra node did not report a port: " << line);
  }
  ~node_process() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      kill(pid_, SIGCONT);  // a stopped process takes its SIGTERM only once it runs again
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    if (output_) fclose(output_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  /// Waits for the process to end (it must be ending: killed, or told to die) and returns the
  /// signal that ended it, 0 when it exited by itself.
  int wait_signal() {
    int status = 0;
    REQUIRE(waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  /// Waits at most `timeout` for the process to end by itself: true when it did, with the signal that
  /// ended it in `sig` (0: it exited).
  bool ended_within(std::chrono::milliseconds timeout, int& sig) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        return true;
      }
      if (std::chrono::steady_clock::now() > deadline) return false;
      usleep(20000);
    }
  }
  /// Sends `sig` (SIGSTOP: the node hangs, alive and silent, its sockets open; SIGCONT: it wakes up).
  void signal(int sig) { REQUIRE(kill(pid_, sig) == 0); }
  void kill_hard() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  FILE* output_ = nullptr;
};

}  // namespace petra::testing

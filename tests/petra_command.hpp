// Runs the `petra` binary as a user would, and keeps what it printed (stdout and stderr) and its exit code.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace petra::testing {

/// The petra binary: $PETRA_BINARY where set (a bundle run on another machine), else this build's.
inline const char* petra_binary() {
  const char* from_environment = std::getenv("PETRA_BINARY");
  return from_environment && *from_environment ? from_environment : PETRA_BINARY;
}

struct command_result {
  int code;            // the exit code; -1 when a signal ended it
  std::string output;  // stdout and stderr together
};

/// `petra <args>` through the shell (args are shell words).
inline command_result run_petra(const std::string& args) {
  const std::string command = std::string(petra_binary()) + " " + args + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace petra::testing

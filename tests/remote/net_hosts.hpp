// Separate hosts on one machine for the remote tests: network namespaces on one bridge
// (tests/remote/hosts.sh), each with its own 192.0.2.x address, removed when the test ends.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/remote/child_process.hpp"

namespace petra::testing {

class net_hosts {
 public:
  /// Makes `count` hosts petra-<tag>-<pid>-<i> (host i at 192.0.2.(10 + i)). The pid keeps
  /// parallel and repeated runs apart; a watcher removes the hosts even if this process is killed.
  net_hosts(const std::string& tag, int count) : prefix_("petra-" + tag + "-" + std::to_string(getpid())) {
    const auto r = run_command(
        {"/bin/bash", script, "up", prefix_, std::to_string(count), "--watch", std::to_string(getpid())},
        120000ms);
    if (r.exit_code == 77) {
      unavailable_ = r.output;
      return;
    }
    REQUIRE_MESSAGE(r.exit_code == 0, "hosts.sh up: " << r.output);
    std::istringstream lines(r.output);
    for (std::string name, address; lines >> name >> address;) {
      names_.push_back(name);
      addresses_.push_back(address);
    }
    REQUIRE(static_cast<int>(names_.size()) == count);
  }
  ~net_hosts() { run_command({"/bin/bash", script, "down", prefix_}, 120000ms); }
  net_hosts(const net_hosts&) = delete;
  net_hosts& operator=(const net_hosts&) = delete;

  /// Why hosts cannot be made on this machine ("" when they were made): the test is then skipped.
  const std::string& unavailable() const { return unavailable_; }
  /// Host i's address, e.g. "192.0.2.11"; the other hosts reach it, the caller's namespace does not.
  const std::string& address(int i) const { return addresses_.at(i); }
  /// `argv` run inside host i.
  std::vector<std::string> on(int i, std::vector<std::string> argv) const {
    argv.insert(argv.begin(), {"/bin/bash", script, "run", names_.at(i)});
    return argv;
  }

 private:
  static constexpr const char* script = PETRA_SOURCE_DIR "/tests/remote/hosts.sh";
  std::string prefix_;
  std::string unavailable_;
  std::vector<std::string> names_, addresses_;
};

}  // namespace petra::testing

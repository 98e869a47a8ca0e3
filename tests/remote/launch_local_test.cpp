// deploy/launch-local.sh: two local nodes, the ci_smoke run with stages 2 and 3 on them, exit
// code 0, and no node process left behind.
#include <cerrno>
#include <regex>
#include <set>

#include "tests/remote/child_process.hpp"
#include "tests/skip.hpp"

using namespace petra::testing;

TEST_CASE("launch-local.sh runs ci_smoke on two nodes and stops them") {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  temp_dir runs("launch");
  const auto r = run_command(
      {"/bin/bash", PETRA_SOURCE_DIR "/deploy/launch-local.sh", "--nodes", "2", "--petra", PETRA_BINARY,
       "ci_smoke", "--set", "runtime.mode=lockstep", "--set", "output.dir=" + runs.path().string()},
      300000ms);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  // Stages 2 and 3 ran on the two nodes, 1, 4 and 5 in the coordinator.
  const std::regex placement(
      R"(pipeline\.nodes=\[local,(127\.0\.0\.1:\d+),(127\.0\.0\.1:\d+),local,local\])");
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(r.output, m, placement), r.output);
  CHECK(m[1] != m[2]);
  CHECK_MESSAGE(r.output.find("done: test accuracy") != std::string::npos, r.output);
  // Every node the script started is gone (it reaped them: no zombie either).
  const std::regex started(R"(node \d \(pid (\d+)\))");
  std::set<pid_t> pids;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), started);
       it != std::sregex_iterator(); ++it)
    pids.insert(std::stoi((*it)[1]));
  CHECK(pids.size() == 2);
  for (pid_t pid : pids) {
    CAPTURE(pid);
    CHECK((kill(pid, 0) != 0 && errno == ESRCH));
  }
}

TEST_CASE("launch-local.sh: a failing coordinator's exit code, and still no node left") {
  const auto r = run_command({"/bin/bash", PETRA_SOURCE_DIR "/deploy/launch-local.sh", "--nodes", "1",
                              "--petra", PETRA_BINARY, "--placement", "local,node1,local,local,local",
                              "ci_smoke", "--set", "runtime.mode=lockstep", "--set", "training.epochs=0"},
                             120000ms);
  CHECK_MESSAGE(r.exit_code == 2, r.output);  // a bad config: petra train's exit code 2
  const std::regex started(R"(node 1 \(pid (\d+)\))");
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(r.output, m, started), r.output);
  CHECK((kill(std::stoi(m[1]), 0) != 0 && errno == ESRCH));
}

// Every command that reads a run directory (eval, report, train --resume) accepts each one petra
// writes: simulate, lockstep and async runs, traced, with faults, with a stage on a petra node.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/actors/node_process.hpp"
#include "tests/app/summary_accuracy.hpp"
#include "tests/petra_command.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;

using petra::testing::scratch_dir;

namespace {

/// Trains ci_smoke over two epochs, stopped after the first and resumed; then evaluates and reports
/// the run directory. Each command must accept it, and `petra eval` print the run's final accuracy.
void check_commands(const scratch_dir& out, const std::string& name, const std::string& sets) {
  INFO("run " << name << ": " << sets);
  const fs::path run = out.path / name;
  const std::string common = " --set output.dir=" + out.path.string() + " --set output.name=" + name +
                             " --set training.epochs=2 --set data.train_limit=512 --set data.test_limit=256 ";
  const petra::testing::command_result first =
      petra::testing::run_petra("train ci_smoke --stop-after-epoch 1" + common + sets);
  INFO(first.output);
  REQUIRE(first.code == 0);
  const petra::testing::command_result resumed = petra::testing::run_petra("train --resume " + run.string());
  INFO(resumed.output);
  REQUIRE(resumed.code == 0);
  CHECK(resumed.output.find("done: test accuracy") != std::string::npos);

  const petra::testing::command_result evaluated = petra::testing::run_petra("eval " + run.string());
  INFO(evaluated.output);
  REQUIRE(evaluated.code == 0);
  std::smatch accuracy;
  REQUIRE(std::regex_search(evaluated.output, accuracy, std::regex("accuracy ([0-9.]+)%")));
  const std::string expected = petra::testing::summary_accuracy(run);
  REQUIRE(!expected.empty());
  CHECK(accuracy[1].str() == expected);

  const petra::testing::command_result reported = petra::testing::run_petra(
      "report " + run.string() + " --output " + (out.path / (name + "-report")).string());
  INFO(reported.output);
  CHECK(reported.code == 0);
  CHECK(fs::exists(out.path / (name + "-report") / "report.html"));
}

}  // namespace

TEST_CASE("run directories: eval, report and train --resume accept every run petra writes") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  SUBCASE("simulate") { check_commands(out, "simulate", "--set runtime.mode=simulate"); }
  SUBCASE("lockstep, traced") { check_commands(out, "lockstep", "--set runtime.mode=lockstep --trace"); }
  SUBCASE("async, traced, with faults") {
    // Drained epoch ends: async scores a live-weight evaluation wave while training goes on, so only
    // a drained epoch's test accuracy is that of the weights the checkpoint holds.
    check_commands(
        out, "async",
        "--set runtime.mode=async --trace --set faults.slow=[1,1.5] --set faults.jitter_ms=[0,1] "
        "--set runtime.pacing=loader --set runtime.credits=6 --set training.drain_at_epoch_end=true");
  }
  SUBCASE("lockstep with a stage on a petra node, traced, with a delayed link") {
    petra::testing::node_process node;
    check_commands(out, "node",
                   "--set runtime.mode=lockstep --trace --set faults.forward_delay=[0,1] "
                   "--set pipeline.nodes=[local," +
                       node.address() + ",local,local,local]");
  }
}

// What a stopped, failed or resumed run says about itself: the trace line and trace.json agree at a
// --stop-after-epoch and after --resume, and faults.crash_at_tick fires once per run, not once per
// process.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/petra_command.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::testing::run_petra;
using petra::testing::scratch_dir;

namespace {

/// The micro-batch ids of trace.json's spans.
std::set<int64_t> traced_ids(const fs::path& file) {
  std::ifstream in(file);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::set<int64_t> ids;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e.contains("args") && e["args"].contains("micro_batch"))
      ids.insert(e["args"]["micro_batch"].get<int64_t>());
  return ids;
}

}  // namespace

TEST_CASE("trace: a stop writes the trace, and each process's line names the ids its file holds") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  const fs::path run = out.path / "t";
  // ci_smoke: 32 micro-batches per epoch; two epochs, stopped after the first.
  auto first = run_petra(
      "train ci_smoke --set runtime.mode=async --set training.epochs=2 --trace "
      "--stop-after-epoch 1 --set output.dir=" +
      out.path.string() + " --set output.name=t");
  INFO(first.output);
  REQUIRE(first.code == 0);
  REQUIRE(fs::exists(run / "trace.json"));
  CHECK(first.output.find("trace: micro-batches 0-31 of the run") != std::string::npos);
  CHECK(first.output.find("trace.json labels them by micro-batch id, 32-63") != std::string::npos);
  std::set<int64_t> ids = traced_ids(run / "trace.json");
  REQUIRE_FALSE(ids.empty());
  CHECK(*ids.begin() == 32);
  CHECK(*ids.rbegin() == 63);

  auto resumed = run_petra("train --resume " + run.string());
  INFO(resumed.output);
  REQUIRE(resumed.code == 0);
  CHECK(resumed.output.find("trace: micro-batches 32-63 of the run") != std::string::npos);
  CHECK(resumed.output.find("trace.json labels them by micro-batch id, 64-95") != std::string::npos);
  ids = traced_ids(run / "trace.json");
  REQUIRE_FALSE(ids.empty());
  CHECK(*ids.begin() == 64);
  CHECK(*ids.rbegin() == 95);
}

TEST_CASE("faults.crash_at_tick fires once per run: a resume after the crash does not crash again") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  const fs::path run = out.path / "c";
  auto failed = run_petra(
      "train ci_smoke --set runtime.mode=lockstep --set 'faults.crash_at_tick=[-1,-1,20,-1,-1]'"
      " --set faults.max_restarts=0 --set faults.recovery=global --set output.dir=" +
      out.path.string() + " --set output.name=c");
  INFO(failed.output);
  REQUIRE(failed.code == 1);
  auto resumed = run_petra("train --resume " + run.string());
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK(resumed.output.find("faults.crash_at_tick: stage 3 crashed in an earlier process of this run") !=
        std::string::npos);
  CHECK(resumed.output.find("injected crash") == std::string::npos);
}

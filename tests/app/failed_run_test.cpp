// A run that gives up (no recovery left, or a rollback that cannot be made) says so in its run
// directory: a failure line for its last failed attempt, a summary marked failed, and how to resume.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/petra_command.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::testing::run_petra;
using petra::testing::scratch_dir;

TEST_CASE("a lockstep run with no recovery left writes its failure line, a failed summary, the resume hint") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  scratch_dir out;
  const fs::path run = out.path / "gave-up";
  const auto r = run_petra(
      "train ci_smoke --set runtime.mode=lockstep --set 'faults.crash_at_tick=[-1,-1,20,-1,-1]'"
      " --set faults.max_restarts=0 --set faults.recovery=global --set output.dir=" +
      out.path.string() + " --set output.name=gave-up");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK(r.output.find("rolling back") == std::string::npos);  // no rollback announced: none is made
  CHECK(r.output.find("faults.max_restarts is 0") != std::string::npos);
  CHECK(r.output.find("continue with: petra train --resume " + run.string()) != std::string::npos);
  std::vector<nlohmann::json> failures, summaries;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["event"] == "failure") failures.push_back(j);
    if (j["event"] == "summary") summaries.push_back(j);
  }
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]["stage"] == 3);
  CHECK(failures[0]["recovery"] == "none");
  CHECK(failures[0]["gave_up"].get<std::string>().find("faults.max_restarts") != std::string::npos);
  CHECK(failures[0]["restored_from"].is_null());
  REQUIRE(summaries.size() == 1);
  CHECK(summaries[0]["status"] == "failed");
  CHECK(summaries[0]["what"].get<std::string>().find("the run gives up") != std::string::npos);
  CHECK(summaries[0]["images_per_s"].is_null());  // what it trained after its restore point is undone
}

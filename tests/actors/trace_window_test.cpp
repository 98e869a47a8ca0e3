// output.trace_steps fitted to the run: a run shorter than the window still writes a timeline with
// spans and flows, and a window set to start after the run's end is refused before anything is written.
#include "tests/actors/node_process.hpp"
#include "tests/actors/trace_checks.hpp"
#include "tests/petra_command.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// `petra train ci_smoke` (one epoch, 32 micro-batches of 32) into `r.root`/`name`.
command_result train_ci_smoke(const run_here& r, const std::string& name, const std::string& sets) {
  return run_petra("train ci_smoke --set output.dir=" + r.root.string() + " --set output.name=" + name + " " +
                   sets);
}

}  // namespace

TEST_CASE("trace: a run shorter than the default window traces the whole run, every stage and its flows") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_here r;
  const auto [code, output] = train_ci_smoke(r, "short", "--set runtime.mode=async --trace");
  INFO(output);
  REQUIRE(code == 0);
  CHECK(output.find("trace: micro-batches 0-31 of the run (the whole run: output.trace_steps [200, 399] ends "
                    "beyond its 32 micro-batches)") != std::string::npos);
  const nlohmann::json trace = r.trace("short");
  check_trace(trace, 32, 63);  // epoch 1's ids start at 32, the micro-batches per epoch
  std::map<std::pair<int, int>, std::string> track_names;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names[{e["pid"], e["tid"]}] = e["args"]["name"];
  std::map<std::string, int> spans;                               // track → spans
  std::map<uint64_t, std::pair<std::string, std::string>> flows;  // id → (from track, to track)
  std::set<int> forwarded;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M") continue;
    const std::string track = track_names[{e["pid"], e["tid"]}];
    if (ph == "X") ++spans[track];
    if (ph == "X" && e["name"] == "forward" && track == "stage 1")
      forwarded.insert(e["args"]["micro_batch"].get<int>());
    if (ph == "s") flows[e["id"].get<uint64_t>()].first = track;
    if (ph == "f") flows[e["id"].get<uint64_t>()].second = track;
  }
  for (int j = 1; j <= 5; ++j)
    CHECK_MESSAGE(spans["stage " + std::to_string(j)] > 0, "no span on stage " << j);
  CHECK(forwarded.size() == 32);  // every training micro-batch of the run
  std::set<std::pair<std::string, std::string>> links;
  for (const auto& [id, ends] : flows) links.insert(ends);
  for (int j = 1; j < 5; ++j) {
    const std::string from = "stage " + std::to_string(j), to = "stage " + std::to_string(j + 1);
    CHECK_MESSAGE(links.count({from, to}) == 1, "no flow " << from << " → " << to);
    CHECK_MESSAGE(links.count({to, from}) == 1, "no flow " << to << " → " << from);
  }
}

TEST_CASE("trace: a window set inside the run is kept, one that ends beyond it is cut at its end") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_here r;
  const auto [code, output] =
      train_ci_smoke(r, "cut", "--set runtime.mode=lockstep --trace --set output.trace_steps=[20,99]");
  INFO(output);
  REQUIRE(code == 0);
  CHECK(
      output.find("trace: micro-batches 20-31 of the run (output.trace_steps [20, 99] cut at the run's end: "
                  "it has 32 micro-batches)") != std::string::npos);
  check_trace(r.trace("cut"), 32 + 20, 32 + 31);
}

TEST_CASE("trace: a window set to start after the run's end is refused at start, naming where it was set") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_here r;
  const auto [code, output] =
      train_ci_smoke(r, "late", "--set runtime.mode=async --trace --set output.trace_steps=[500,600]");
  INFO(output);
  CHECK(code == 2);
  CHECK(output.find("output.trace_steps in --set output.trace_steps=[500,600]: [500, 600] starts after the "
                    "run's end (it has 32 micro-batches, 0-31)") != std::string::npos);
  CHECK(!fs::exists(r.root / "late"));
}

// The timeline of the actor runtimes (output.trace) and the per-step metric lines
// (output.metrics_every_steps), on real runs: in one process and with a stage on a petra node.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "tests/actors/node_process.hpp"
#include "tests/actors/trace_checks.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

TEST_CASE("trace: a lockstep run's timeline has every stage's spans, whole flows and its window only") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_here r;
  // tiny with micro-batch 32: 16 micro-batches per epoch, ids of epoch 1 from 16.
  REQUIRE(r.train("traced", {"runtime.mode=lockstep", "output.trace=true", "output.trace_steps=[3,9]"}) == 0);
  const nlohmann::json trace = r.trace("traced");
  const auto processes = check_trace(trace, 16 + 3, 16 + 9);
  CHECK(processes == std::set<std::string>{"coordinator"});
  std::set<std::string> names;
  std::set<int> micro_batches;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X" && e["name"] == "forward") micro_batches.insert(e["args"]["micro_batch"].get<int>());
  }
  for (const char* track : {"stage 1", "stage 2", "stage 3", "stage 4", "loader", "loss", "coordinator"})
    CHECK_MESSAGE(names.count(track) == 1, "no track " << track);
  CHECK(micro_batches.size() == 7);  // micro-batches 3..9 of the run
}

TEST_CASE("trace: a stage on a petra node joins the coordinator's timeline on its clock") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_here r;
  node_process node;
  REQUIRE(r.train("two", {"runtime.mode=lockstep", "output.trace=true", "output.trace_steps=[0,15]",
                          "pipeline.nodes=[local," + node.address() + ",local,local]"}) == 0);
  const nlohmann::json trace = r.trace("two");
  const auto processes = check_trace(trace, 16, 16 + 15);
  REQUIRE(processes.size() == 2);
  CHECK(processes.count("coordinator") == 1);
  // The node's stage 2 sits between stage 1 and stage 3 on the common clock: its forward of a
  // micro-batch starts after stage 1's and ends before stage 3's starts.
  std::map<std::string, std::map<int, std::pair<double, double>>> forward;  // track name → id → [start, end]
  std::map<std::pair<int, int>, std::string> track_names;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names[{e["pid"], e["tid"]}] = e["args"]["name"];
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "forward") {
      const std::string track = track_names[{e["pid"], e["tid"]}];
      const double ts = e["ts"];
      forward[track][e["args"]["micro_batch"].get<int>()] = {ts, ts + e["dur"].get<double>()};
    }
  REQUIRE(forward["stage 2"].size() == 16);
  for (const auto& [id, span] : forward["stage 2"]) {
    INFO("micro-batch " << id);
    CHECK(span.first >= forward["stage 1"][id].second - 1000);  // within the clock offset's uncertainty (µs)
    CHECK(span.second <= forward["stage 3"][id].first + 1000);
  }
}

TEST_CASE("per-step lines: every N optimizer steps, with loss, lr, images/s and each stage's window") {
  PETRA_REQUIRE_FASHION_MNIST();
  run_here r;
  for (const std::string mode : {"simulate", "lockstep", "async"}) {
    INFO(mode);
    // 16 micro-batches per epoch at k = 1, 2 epochs: 32 optimizer steps at stage 1.
    REQUIRE(r.train(mode, {"runtime.mode=" + mode, "output.metrics_every_steps=4", "training.epochs=2"}) ==
            0);
    const auto steps = r.lines(mode, "step");
    REQUIRE(steps.size() >= 6);
    int64_t previous = 0;
    for (const auto& s : steps) {
      CHECK(s["step"].get<int64_t>() % 4 == 0);
      CHECK(s["step"].get<int64_t>() > previous);
      previous = s["step"];
      CHECK(s["loss"].get<double>() > 0);
      CHECK(s["lr"].get<double>() > 0);
      CHECK(s["images_per_s"].get<double>() > 0);
      REQUIRE(s["stages"].size() == 4);
      CHECK(s["stages"][3]["staleness_mean"] == 0.0);  // the last stage: forward and backward in one tick
      CHECK(s["stages"][0]["inversion_error_mean"].is_null());  // the stem is not reversible
    }
    CHECK(previous == 32);
  }
}

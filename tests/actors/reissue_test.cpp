// Lost micro-batches re-issued (docs/design.md §6): after a node holding a middle stage is killed with
// SIGKILL (async) or a middle stage crashes (lockstep) and the stage is rebuilt alone, the loader
// sends what was lost in flight again, so that stage 1 completes the backward of every micro-batch
// of the epoch exactly once.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "app/commands.hpp"
#include "tests/actors/metrics_lines.hpp"
#include "tests/actors/node_process.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

namespace {

/// How many times stage 1 ran the forward and the backward of each micro-batch, from the trace.
struct stage_one_counts {
  std::map<int64_t, int> forwards, backwards;
};

stage_one_counts count_stage_one(const fs::path& trace_file) {
  std::ifstream in(trace_file);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::set<std::pair<int64_t, int64_t>> tracks;  // (pid, tid) of the tracks named "stage 1"
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "stage 1")
      tracks.insert({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()});
  REQUIRE(!tracks.empty());
  stage_one_counts out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || tracks.count({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}) == 0) continue;
    const std::string name = e["name"];
    if (name == "forward") ++out.forwards[e["args"]["micro_batch"].get<int64_t>()];
    if (name == "rebuild + backward") ++out.backwards[e["args"]["micro_batch"].get<int64_t>()];
  }
  return out;
}

/// What both runtimes must show after one stage-local recovery of `rebuilt` (1-based) in a one-epoch
/// run of `per_epoch` micro-batches: the failure line and the summary agree on the re-issued
/// micro-batches, none is lost, and the draws in the timeline (epoch 1's ids run from per_epoch on)
/// went through stage 1's backward once each, the re-issued ones through its forward twice and
/// every other one once. Returns how many were re-issued.
int64_t check_each_image_once(const fs::path& run, int64_t per_epoch, int rebuilt) {
  const auto failures = event_lines(run, "failure");
  REQUIRE(failures.size() == 1);
  MESSAGE("failure: " << failures[0].dump());
  CHECK(failures[0]["recovery"] == "local");
  CHECK(failures[0]["stages_rebuilt"] == nlohmann::json::array({rebuilt}));
  const int64_t reissued = failures[0]["reissued_micro_batches"].get<int64_t>();
  CHECK(reissued >= 1);  // the failure lands mid-epoch: the stage before had micro-batches in flight
  CHECK(failures[0]["lost_micro_batches"] == 0);
  const nlohmann::json counted = event_lines(run, "summary").at(0)["micro_batches"];
  CHECK(counted["completed"] == per_epoch);
  CHECK(counted["reissued"] == reissued);
  CHECK(counted["lost"] == 0);
  CHECK(counted["local_recoveries"] == 1);
  CHECK(counted["restarts"] == 0);

  const stage_one_counts counts = count_stage_one(run / "trace.json");
  CHECK(counts.backwards.size() == static_cast<std::size_t>(per_epoch));
  int64_t twice = 0;
  for (int64_t id = per_epoch; id < 2 * per_epoch; ++id) {
    CAPTURE(id);
    const auto b = counts.backwards.find(id);
    CHECK((b != counts.backwards.end() && b->second == 1));
    const auto f = counts.forwards.find(id);
    REQUIRE(f != counts.forwards.end());
    CHECK(f->second <= 2);
    twice += f->second == 2 ? 1 : 0;
  }
  CHECK(twice == reissued);
  // The epoch's training figures count each image once.
  CHECK(event_lines(run, "epoch").size() == 1);
  return reissued;
}

}  // namespace

TEST_CASE(
    "async: SIGKILL of a node holding a middle stage: every micro-batch lost in flight is re-issued, "
    "stage 1 completes each image of the epoch exactly once") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path root = fs::temp_directory_path() / ("petra-reissue-" + std::to_string(::getpid()));
  fs::remove_all(root);
  node_process doomed, spare;
  constexpr int64_t per_epoch = 8192 / 8;
  // One epoch, no snapshots: stage 2 starts again from the checkpoint the run began with, its
  // neighbours keep their state. The timeline records every micro-batch.
  const std::vector<std::string> sets = {"runtime.mode=async",
                                         "training.epochs=1",
                                         "data.train_limit=8192",
                                         "data.test_limit=64",
                                         "pipeline.stage_blocks=[1,2,1,1]",
                                         "pipeline.nodes=[local," + doomed.address() + ",local,local]",
                                         "pipeline.spare_nodes=[" + spare.address() + "]",
                                         "faults.kill_node=[" + doomed.address() + "@0.3]",
                                         "output.checkpoint_every_steps=0",
                                         "output.trace=true",
                                         "output.trace_steps=[0," + std::to_string(per_epoch) + "]",
                                         "output.dir=" + root.string(),
                                         "output.name=killed",
                                         "output.progress=false"};
  REQUIRE(app::train_command({"tiny", sets, "", 0}) == 0);
  CHECK(doomed.wait_signal() == SIGKILL);
  check_each_image_once(root / "killed", per_epoch, 2);
  fs::remove_all(root);
}

TEST_CASE(
    "lockstep: a crashed middle stage is rebuilt alone and what was lost in flight is re-issued after the "
    "planned ticks: stage 1 completes each image of the epoch exactly once") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path root = fs::temp_directory_path() / ("petra-reissue-lockstep-" + std::to_string(::getpid()));
  fs::remove_all(root);
  constexpr int64_t per_epoch = 2048 / 8;
  for (const std::string order : {"forward_first", "backward_first"}) {  // training.tick_order
    CAPTURE(order);
    // Stage 3 of 4 throws at tick 100 of 256 + 7 and starts again from the checkpoint the run
    // began with; stages 1, 2 and 4 keep their state.
    const std::vector<std::string> sets = {"runtime.mode=lockstep",
                                           "training.epochs=1",
                                           "training.tick_order=" + order,
                                           "data.train_limit=2048",
                                           "data.test_limit=64",
                                           "pipeline.stage_blocks=[1,2,1,1]",
                                           "faults.crash_at_tick=[-1,-1,100,-1]",
                                           "output.checkpoint_every_steps=0",
                                           "output.trace=true",
                                           "output.trace_steps=[0," + std::to_string(per_epoch) + "]",
                                           "output.dir=" + root.string(),
                                           "output.name=" + order,
                                           "output.progress=false"};
    REQUIRE(app::train_command({"tiny", sets, "", 0}) == 0);
    const int64_t reissued = check_each_image_once(root / order, per_epoch, 3);
    CHECK(reissued <= 2 * (4 - 2) + 1);  // at most what stage 2 holds: 2(J − j) + 1
  }
  fs::remove_all(root);
}

// A `petra node` that hangs (SIGSTOP: alive, its socket open, silent) mid-run: the heartbeats
// (runtime.heartbeat_timeout) declare it lost within the timeout and one heartbeat interval, and the
// run recovers on the spare node like after a crash (a rollback, or its stage rebuilt alone). When
// the node wakes up (SIGCONT) it is fenced: its late messages are dropped and counted, it is told to
// stop, and the run ends bit for bit as the same run whose node was killed (SIGKILL) instead.
#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>

#include "actors/heartbeat.hpp"
#include "compute/serialize/safetensors.hpp"
#include "tests/files.hpp"
#include "tests/remote/hang_runs.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

// What a loaded machine may add to the detection: the heartbeat round's own delay, the failure's way
// to the trainer thread and its line to this test.
constexpr double slack_s = 5;

/// `petra train` of the tiny model, lockstep, one epoch of 1024 micro-batches, stage 2 on `node`,
/// recovered onto `spare` when it is lost (`recovery`: faults.recovery).
std::vector<std::string> train_argv(const temp_dir& runs, const std::string& name, const node_child& node,
                                    const node_child& spare, const std::string& recovery = "global") {
  std::vector<std::string> argv{PETRA_BINARY, "train", "tiny"};
  const std::vector<std::string> sets{"runtime.mode=lockstep",
                                      "data.train_limit=8192",
                                      "data.test_limit=64",
                                      "training.epochs=1",
                                      "pipeline.stage_blocks=[1,2,1,1]",
                                      "pipeline.nodes=[local," + node.address() + ",local,local]",
                                      "pipeline.spare_nodes=[" + spare.address() + "]",
                                      "faults.recovery=" + recovery,
                                      "faults.stall_seconds=30",
                                      "runtime.heartbeat_timeout=" + std::to_string(heartbeat_timeout_s),
                                      "output.checkpoint_every_steps=4",
                                      "output.metrics_every_steps=4",
                                      "output.progress=false",
                                      "output.dir=" + runs.path().string(),
                                      "output.name=" + name};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  return argv;
}

int differing_tensors(const std::string& a, const std::string& b) {
  const auto x = load_safetensors(a).tensors, y = load_safetensors(b).tensors;
  REQUIRE(x.size() == y.size());
  int n = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i].first != y[i].first || x[i].second.shape() != y[i].second.shape() ||
        std::memcmp(x[i].second.data(), y[i].second.data(), x[i].second.bytes()) != 0)
      ++n;
  return n;
}

}  // namespace

TEST_CASE("a node stopped mid-run (SIGSTOP) is declared lost within heartbeat_timeout + one heartbeat") {
  PETRA_REQUIRE_FASHION_MNIST();
  temp_dir runs("hang");
  node_child hung({"--listen", "127.0.0.1:0"}, (runs.path() / "hung.stderr").string());
  node_child spare({"--listen", "127.0.0.1:0"});
  child_process run(train_argv(runs, "hung", hung, spare));
  await_training(runs, "hung");
  const auto stopped = std::chrono::steady_clock::now();
  REQUIRE(kill(hung.process().pid(), SIGSTOP) == 0);
  std::string log;
  // stall_seconds (30) would name a stall instead, much later: only the heartbeats say "declared lost".
  const bool noticed = await_line(run, "declared lost", log, 60s);
  const double detection = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  CHECK_MESSAGE(noticed, log);
  const double bound =
      heartbeat_timeout_s + heartbeat_interval(std::chrono::duration<double>(heartbeat_timeout_s)).count();
  MESSAGE("declared lost " << detection << " s after SIGSTOP (bound " << bound << " s + " << slack_s
                           << " s of scheduling slack)");
  CHECK(detection <= bound + slack_s);
  // Its silence was waited for (a closed connection is noticed at once); the silence counts from its
  // last answer, up to an interval (more on a loaded machine) before the SIGSTOP.
  CHECK(detection >= heartbeat_timeout_s / 4);
  // The run recovers on the spare node and finishes.
  log += run.read_all(300000ms);
  CHECK_MESSAGE(run.wait_exit(10000ms) == 0, log);
  CHECK_MESSAGE(log.find("done: test accuracy") != std::string::npos, log);
  kill(hung.process().pid(), SIGCONT);
}

TEST_CASE(
    "a stopped node woken up after the run moved its stage is fenced and the run ends as with SIGKILL") {
  PETRA_REQUIRE_FASHION_MNIST();
  temp_dir runs("fence");
  std::string killed_log, hung_log;
  {
    node_child doomed({"--listen", "127.0.0.1:0"});
    node_child spare({"--listen", "127.0.0.1:0"});
    child_process run(train_argv(runs, "killed", doomed, spare));
    await_training(runs, "killed");
    REQUIRE(kill(doomed.process().pid(), SIGKILL) == 0);
    killed_log = run.read_all(300000ms);
    REQUIRE_MESSAGE(run.wait_exit(10000ms) == 0, killed_log);
  }
  {
    const std::string node_stderr = (runs.path() / "hung.stderr").string();
    node_child hung({"--listen", "127.0.0.1:0"}, node_stderr);
    node_child spare({"--listen", "127.0.0.1:0"});
    child_process run(train_argv(runs, "hung", hung, spare));
    await_training(runs, "hung");
    REQUIRE(kill(hung.process().pid(), SIGSTOP) == 0);
    REQUIRE_MESSAGE(await_line(run, "declared lost", hung_log, 60s), hung_log);
    // The run rolls back onto the spare node meanwhile; then the old node wakes up with what it was
    // sent while it slept (heartbeats, messages for its stage) and its stage's work in hand.
    std::this_thread::sleep_for(1s);
    REQUIRE(kill(hung.process().pid(), SIGCONT) == 0);
    hung_log += run.read_all(300000ms);
    REQUIRE_MESSAGE(run.wait_exit(10000ms) == 0, hung_log);
    // It was told to stop: it exits by itself.
    const auto node_exit = hung.process().wait_exit(30000ms);
    CHECK_MESSAGE(node_exit == 0, "exit code " << node_exit.value_or(-1) << "; " << file_text(node_stderr));
    CHECK(file_text(node_stderr).find("fenced") != std::string::npos);
  }
  // Its late messages were dropped and counted.
  std::smatch m;
  REQUIRE_MESSAGE(
      std::regex_search(hung_log, m, std::regex(R"(fencing: \d+ late message\(s\) .* \((\d+) in all\))")),
      hung_log);
  CHECK(std::stoll(m[1]) >= 1);
  MESSAGE("hung run: " << m[0]);
  // Nothing of it reached the run: the same weights as the run whose node was killed, bit for bit
  // (lockstep, each rolled back to its last snapshot and replayed).
  CHECK(differing_tensors((runs.path() / "killed" / "checkpoint.safetensors").string(),
                          (runs.path() / "hung" / "checkpoint.safetensors").string()) == 0);
  CHECK(killed_log.find("fencing:") == std::string::npos);  // a killed node sends nothing late
}

TEST_CASE("a stopped node's stage is rebuilt alone on the spare and the old one woken up is fenced") {
  PETRA_REQUIRE_FASHION_MNIST();
  temp_dir runs("fence-local");
  const std::string node_stderr = (runs.path() / "hung.stderr").string();
  node_child hung({"--listen", "127.0.0.1:0"}, node_stderr);
  node_child spare({"--listen", "127.0.0.1:0"});
  child_process run(train_argv(runs, "hung", hung, spare, "local"));
  await_training(runs, "hung");
  REQUIRE(kill(hung.process().pid(), SIGSTOP) == 0);
  std::string log;
  // Stage-local recovery reports once stage 2 runs again on the spare: the old one wakes up among
  // neighbours that kept their state, with inputs of theirs and its own work to send them.
  REQUIRE_MESSAGE(await_line(run, "declared lost", log, 60s), log);
  REQUIRE(kill(hung.process().pid(), SIGCONT) == 0);
  log += run.read_all(300000ms);
  REQUIRE_MESSAGE(run.wait_exit(10000ms) == 0, log);
  const auto node_exit = hung.process().wait_exit(30000ms);  // told to stop, it exits by itself
  CHECK_MESSAGE(node_exit == 0, "exit code " << node_exit.value_or(-1) << "; " << file_text(node_stderr));
  CHECK_MESSAGE(log.find("fencing: ") != std::string::npos, log);
  // Every micro-batch accounted for, as after a kill: completed, or lost with the stage.
  std::ifstream metrics(runs.path() / "hung" / "metrics.jsonl");
  nlohmann::json summary;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("event", "") == "summary") summary = j;
  }
  REQUIRE_MESSAGE(summary.is_object(), log);
  const nlohmann::json& counted = summary["micro_batches"];
  CHECK(counted["local_recoveries"] == 1);
  CHECK(counted["restarts"] == 0);
  CHECK(counted["completed"].get<int64_t>() + counted["lost"].get<int64_t>() == 1024);
  MESSAGE(counted.dump());
}

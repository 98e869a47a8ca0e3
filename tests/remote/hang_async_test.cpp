// An async run whose `petra node` holding a middle stage hangs (SIGSTOP) at the default kind of
// timeout: the heartbeats declare the node lost (not CAF's own silence check, which used to close the
// connection first above 10 s and make it look crashed), its stage alone is rebuilt on the spare node
// (no global rollback), and every micro-batch is accounted for. The node, woken up only after the run
// ended, holds nothing of it any more: it was told to stop (and exits), or finds its coordinator gone
// (and goes back to listening).
#include "tests/files.hpp"
#include "tests/remote/hang_runs.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("async: a stopped node holding a middle stage is declared lost and its stage rebuilt alone") {
  PETRA_REQUIRE_FASHION_MNIST();
  temp_dir runs("hang-async");
  const std::string node_stderr = (runs.path() / "hung.stderr").string();
  node_child hung({"--listen", "127.0.0.1:0", "--threads", "1"}, node_stderr);
  node_child spare({"--listen", "127.0.0.1:0", "--threads", "1"});
  std::vector<std::string> argv{PETRA_BINARY, "train", "tiny"};
  // 12 s: above CAF's connection timeout of 10 s, where the heartbeats used to come second.
  const std::vector<std::string> sets{"runtime.mode=async",
                                      "data.train_limit=8192",
                                      "data.test_limit=64",
                                      "training.epochs=1",
                                      "pipeline.stage_blocks=[1,2,1,1]",
                                      "pipeline.nodes=[local,local," + hung.address() + ",local]",
                                      "pipeline.spare_nodes=[" + spare.address() + "]",
                                      "runtime.heartbeat_timeout=12",
                                      "faults.stall_seconds=60",
                                      "output.checkpoint_every_steps=4",
                                      "output.metrics_every_steps=4",
                                      "output.progress=false",
                                      "output.dir=" + runs.path().string(),
                                      "output.name=hung"};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  child_process run(argv);
  await_training(runs, "hung");
  REQUIRE(kill(hung.process().pid(), SIGSTOP) == 0);
  std::string log;
  CHECK_MESSAGE(await_line(run, "declared lost", log, 120s), log);
  log += run.read_all(400000ms);
  REQUIRE_MESSAGE(run.wait_exit(10000ms) == 0, log);

  // Stage 3 alone, on the spare node; no rollback.
  const auto failures = metrics_events(runs, "hung", "failure");
  REQUIRE_MESSAGE(failures.size() == 1, log);
  const nlohmann::json& failure = failures.front();
  CHECK_MESSAGE(failure["recovery"] == "local", failure.dump());
  CHECK(failure["stage"] == 3);
  CHECK(failure["stages_rebuilt"] == nlohmann::json::array({3}));
  CHECK(failure["what"].get<std::string>().find("declared lost") != std::string::npos);
  // Every micro-batch accounted for: all 1,024 completed, what was in flight re-issued.
  const auto summaries = metrics_events(runs, "hung", "summary");
  REQUIRE(summaries.size() == 1);
  const nlohmann::json& counted = summaries.front()["micro_batches"];
  CHECK(counted["local_recoveries"] == 1);
  CHECK(counted["restarts"] == 0);
  CHECK(counted["completed"] == 1024);
  CHECK(counted["lost"] == 0);
  CHECK(counted["reissued"].get<int64_t>() >= 1);
  MESSAGE(counted.dump());

  // Woken up after the run: it keeps nothing of it.
  REQUIRE(kill(hung.process().pid(), SIGCONT) == 0);
  const bool fenced = await_text(node_stderr, "fenced", 30s);
  if (fenced) {
    const auto node_exit = hung.process().wait_exit(30000ms);
    CHECK_MESSAGE(node_exit == 0, "exit code " << node_exit.value_or(-1) << "; " << file_text(node_stderr));
  } else {
    CHECK_MESSAGE(await_text(node_stderr, "stopped them; listening for the next run", 30s),
                  file_text(node_stderr));
    CHECK(hung.process().alive());
  }
  MESSAGE("the woken node: " << file_text(node_stderr));
}

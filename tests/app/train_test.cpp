// `petra train` end to end: a smoke run learns and writes its run directory; bad input
// (config, data) gives a clear message, exit code 2 and no files at all.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/commands.hpp"
#include "tests/app/refused_train.hpp"
#include "tests/files.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::train_options;
using petra::app::train_command;

using petra::testing::check_train_refused;
using petra::testing::scratch_dir;

namespace {}  // namespace

TEST_CASE("smoke: two short epochs of PETRA on Fashion-MNIST lower the loss and write a run directory") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  train_options o;
  o.config = "ci_smoke";
  o.sets = {"output.dir=" + out.path.string(), "output.name=smoke",        "training.epochs=2",
            "data.train_limit=2048",           "model.arch=fashion_small", "training.micro_batch=32"};
  REQUIRE(train_command(o) == 0);
  const fs::path run = out.path / "smoke";
  CHECK(fs::exists(run / "config.yaml"));
  CHECK(fs::exists(run / "checkpoint.safetensors"));
  const auto metrics = petra::testing::json_lines(run / "metrics.jsonl");
  REQUIRE(metrics.size() == 3);  // two epochs and the summary
  CHECK(metrics[1]["train_loss"].get<double>() < metrics[0]["train_loss"].get<double>());
  CHECK(metrics[1]["train_loss"].get<double>() < 2.0);     // chance is ln 10 = 2.30
  CHECK(metrics[1]["test_accuracy"].get<double>() > 0.3);  // chance is 0.1
  const auto& stages = metrics[1]["stages"];
  REQUIRE(stages.size() == 8);
  CHECK(stages[0]["delay_ticks"].contains("14"));  // stage 1 of 8: 2(J-1)
  CHECK(stages[7]["delay_ticks"].contains("0"));
  CHECK(metrics[2]["event"] == "summary");
  for (const auto& entry : fs::directory_iterator(run))  // atomic writes leave no temp files
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
}

TEST_CASE("bad config: a message naming the key, exit code 2, nothing written") {
  scratch_dir out;
  const fs::path config = out.path / "bad.yaml";
  std::ofstream(config) << "training:\n  epochs: 3\n  micro_bach: 64\n";
  train_options o;
  o.config = config.string();
  o.sets = {"output.dir=" + (out.path / "runs").string()};
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const int code = train_command(o);
  std::cerr.rdbuf(old);
  CHECK(code == 2);
  CHECK(captured.str().find("micro_bach") != std::string::npos);
  CHECK(captured.str().find("bad.yaml:3") != std::string::npos);
  CHECK_FALSE(fs::exists(out.path / "runs"));
  CHECK(out.entries() == 1);  // only the config itself
}

TEST_CASE("bad data: a message naming the file, exit code 2, nothing written") {
  scratch_dir out;
  fs::create_directories(out.path / "data");
  std::ofstream(out.path / "data" / "train-images-idx3-ubyte") << "not an idx file";
  train_options o;
  o.config = "ci_smoke";
  o.sets = {"output.dir=" + (out.path / "runs").string(), "data.path=" + (out.path / "data").string()};
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const int code = train_command(o);
  std::cerr.rdbuf(old);
  CHECK(code == 2);
  CHECK(captured.str().find((out.path / "data").string()) != std::string::npos);
  CHECK_FALSE(fs::exists(out.path / "runs"));
}

TEST_CASE("an existing non-empty run directory is never overwritten: bad input, exit code 2") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  fs::create_directories(out.path / "taken");
  std::ofstream(out.path / "taken" / "keep.txt") << "precious";
  train_options o;
  o.config = "ci_smoke";
  o.sets = {"output.dir=" + out.path.string(), "output.name=taken"};
  CHECK(train_command(o) == 2);
  std::ifstream in(out.path / "taken" / "keep.txt");
  std::string kept;
  in >> kept;
  CHECK(kept == "precious");
}

TEST_CASE("a run's config.yaml repeats the run into a new directory, also when output.name was set") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  train_options first;
  first.config = "ci_smoke";
  first.sets = {"output.dir=" + out.path.string(), "output.name=first", "output.progress=false",
                "data.train_limit=256", "data.test_limit=64"};
  REQUIRE(train_command(first) == 0);
  train_options again;
  again.config = (out.path / "first" / "config.yaml").string();
  REQUIRE(train_command(again) == 0);
  std::vector<fs::path> runs;
  for (const auto& entry : fs::directory_iterator(out.path)) runs.push_back(entry.path());
  REQUIRE(runs.size() == 2);
  for (const fs::path& run : runs) {
    const auto metrics = petra::testing::json_lines(run / "metrics.jsonl");
    REQUIRE(metrics.size() == 2);
  }
  // Same config, same seed, same runtime (simulate): the same test accuracy.
  CHECK(petra::testing::json_lines(runs[0] / "metrics.jsonl")[0]["test_accuracy"] ==
        petra::testing::json_lines(runs[1] / "metrics.jsonl")[0]["test_accuracy"]);
}

TEST_CASE("a key the runtime cannot honour is refused: exit code 2, the key named, nothing written") {
  scratch_dir out;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"runtime.mode=simulate", "faults.drop=[0,0.1,0,0,0]"}, "faults.drop"},
      {{"runtime.mode=simulate", "faults.crash_at_tick=[-1,3,-1,-1,-1]"}, "faults.crash_at_tick"},
      {{"runtime.mode=simulate", "pipeline.nodes=[local,127.0.0.1:7001,local,local,local]"},
       "pipeline.nodes"},
      {{"runtime.mode=simulate", "runtime.credits=3"}, "runtime.credits"},
      {{"runtime.mode=simulate", "runtime.pacing=loader"}, "runtime.pacing"},
      {{"runtime.mode=lockstep", "runtime.pacing=loader"}, "runtime.pacing"},
      {{"runtime.mode=lockstep", "faults.reorder=[0,0.1,0,0,0]"}, "faults.reorder"},
      {{"runtime.mode=lockstep", "faults.jitter_ms=[0,2,0,0,0]"}, "faults.jitter_ms"},
      {{"runtime.mode=async", "training.tick_order=backward_first"}, "training.tick_order"},
  };
  for (const auto& [sets, key] : cases) {
    CAPTURE(key);
    check_train_refused("ci_smoke", sets, key, out.path / "runs");
  }
}

TEST_CASE(
    "per-stage lists of another length than the model's stages: exit code 2, the key named, nothing "
    "written") {
  scratch_dir out;
  // ci_smoke's tiny model cut one block per stage (pipeline.stage_blocks empty): 5 stages. A shorter
  // list would leave stages where the user did not say (a device list of 2 put the rest on the CPU).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"pipeline.devices=[cpu,cpu]", "pipeline.devices has 2 entries but the model makes 5 stages"},
      {"pipeline.threads=[1,1,1,1,1,1]", "pipeline.threads has 6 entries but the model makes 5 stages"},
      {"pipeline.nodes=[local,local]", "pipeline.nodes has 2 entries"},
      {"faults.drop=[0,0,0,0,0,0.5]", "faults.drop has 6 entries but the model makes 5 stages"},
      {"faults.slow=[1,1,1,1,1,1,3]", "faults.slow has 7 entries"},
  };
  for (const auto& [set, message] : cases) {
    CAPTURE(set);
    check_train_refused("ci_smoke", {set, "runtime.mode=lockstep"}, message, out.path / "runs");
  }
}

TEST_CASE(
    "runtime.cudnn_algorithms naming a bad file: exit code 2, the file and the problem named, nothing "
    "written") {
  scratch_dir out;
  const std::string bad = (out.path / "cudnn_algorithms.json").string();
  std::ofstream(bad) << R"({"format": "petra-cudnn-algorithms", "version": 1, "algorithms": [{"device": 0,
    "direction": "forward", "x": [64, 1, 28, 28], "w": [8, 1, 3, 3], "stride": 1, "padding": 1,
    "data": "fp32", "math_mode": "fp32", "deterministic": false, "algorithm": 9, "math": "fma",
    "workspace_bytes": 0}]})";
  check_train_refused("ci_smoke", {"runtime.cudnn_algorithms=" + bad},
                      "runtime.cudnn_algorithms: '" + bad + "': algorithms[0].algorithm is 9, outside 0-7",
                      out.path / "runs");
  const std::string missing = (out.path / "none.json").string();
  check_train_refused("ci_smoke", {"runtime.cudnn_algorithms=" + missing},
                      "runtime.cudnn_algorithms: '" + missing + "': cannot be read", out.path / "runs");
  const std::string not_json = (out.path / "notes.txt").string();
  std::ofstream(not_json) << "forward: algorithm 1\n";
  check_train_refused("ci_smoke", {"runtime.cudnn_algorithms=" + not_json},
                      "runtime.cudnn_algorithms: '" + not_json + "': is not JSON", out.path / "runs");
}

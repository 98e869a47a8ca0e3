// What a resumed run reports: one epoch line per epoch and the accuracy of the weights it trained,
// images/s over only what it trained itself, the config changes it may make (recorded, config.yaml
// updated) and those it refuses, and --stop-after-epoch values it cannot honour.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/commands.hpp"
#include "config/config.hpp"
#include "tests/petra_command.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::train_options;
using petra::app::train_command;
using petra::testing::run_petra;
using petra::testing::scratch_dir;

namespace {

/// The lines of a run's metrics.jsonl of one event kind, in file order.
std::vector<nlohmann::json> events(const fs::path& run, const std::string& event) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("event", "") == event) out.push_back(std::move(j));
  }
  return out;
}

/// Every file under `dir` with its content: what a refused command must leave as it was.
std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      out[fs::relative(entry.path(), dir).string()] = text.str();
    }
  return out;
}

/// `petra train` in this process with its stderr kept: the exit code and what it said there.
std::pair<int, std::string> train_quietly(const train_options& o) {
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const int code = train_command(o);
  std::cerr.rdbuf(old);
  return {code, captured.str()};
}

/// ci_smoke on a few images for `epochs` epochs into `out`/`name`, stopped after epoch `stop`.
fs::path stopped_run(const fs::path& out, const std::string& name, int epochs, int stop) {
  train_options o;
  o.config = "ci_smoke";
  o.sets = {"output.dir=" + out.string(), "output.name=" + name, "training.epochs=" + std::to_string(epochs),
            "data.train_limit=256", "data.test_limit=128"};
  o.stop_after_epoch = stop;
  REQUIRE(train_command(o) == 0);
  const auto lines = events(out / name, "epoch");  // stopped where asked, with no summary
  REQUIRE(!lines.empty());
  REQUIRE(lines.back()["epoch"] == stop);
  REQUIRE(events(out / name, "summary").empty());
  return out / name;
}

/// images/s × the seconds it was measured over: the images it counted.
double images_counted(const nlohmann::json& line, const char* seconds_key) {
  return line.at("images_per_s").get<double>() * line.at(seconds_key).get<double>();
}

std::string percent(double accuracy) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100 * accuracy);
  return text;
}

}  // namespace

TEST_CASE(
    "a resume after a process that logged the epoch and was killed: one epoch line, the real accuracy") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  scratch_dir out;
  const fs::path run = stopped_run(out.path, "r", 2, 1);
  // As a process killed right after epoch 2's line reached metrics.jsonl, before its checkpoint: the
  // line is there, the checkpoint is still epoch 1's end.
  const auto first = events(run, "epoch");
  REQUIRE(first.size() == 1);
  nlohmann::json ghost = first[0];
  ghost["epoch"] = 2;
  ghost["test_accuracy"] = 0.0123;
  std::ofstream(run / "metrics.jsonl", std::ios::app) << ghost.dump() << "\n";

  const auto resumed = run_petra("train --resume " + run.string());
  INFO(resumed.output);
  REQUIRE(resumed.code == 0);
  CHECK(resumed.output.find("epoch 2/2") != std::string::npos);  // the epoch it trained, on the terminal
  const auto epochs = events(run, "epoch");
  REQUIRE(epochs.size() == 2);  // the killed process's line gave way to the resumed one's
  CHECK(epochs[0]["epoch"] == 1);
  CHECK(epochs[1]["epoch"] == 2);
  const double accuracy = epochs[1]["test_accuracy"].get<double>();
  CHECK(accuracy != 0.0123);
  CHECK(accuracy > 0);
  const auto summary = events(run, "summary");
  REQUIRE(summary.size() == 1);
  CHECK(summary[0]["test_accuracy"].get<double>() == accuracy);
  CHECK(resumed.output.find("done: test accuracy " + percent(accuracy)) != std::string::npos);
}

TEST_CASE("a run resumed from a mid-epoch snapshot counts in images/s only the images it trained") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  scratch_dir out;
  // 32 micro-batches of 32 per epoch, two epochs; a snapshot every 10 optimizer steps, the first
  // process stopped as if killed right after the one before micro-batch 10.
  train_options first;
  first.config = "ci_smoke";
  first.sets = {"output.dir=" + out.path.string(), "output.name=r", "training.epochs=2",
                "output.checkpoint_every_steps=10"};
  first.stop_after_snapshots = 1;
  REQUIRE(train_command(first) == 0);
  train_options again;
  again.resume = (out.path / "r").string();
  REQUIRE(train_command(again) == 0);

  // Resumed at the cut before micro-batch 10: of epoch 1, stage 1 finished at most micro-batches 1-31
  // after it (the ones in flight there too), at least 10-31; epoch 2 whole.
  const auto epochs = events(out.path / "r", "epoch");
  REQUIRE(epochs.size() == 2);
  const double epoch1 = images_counted(epochs[0], "epoch_seconds");
  CHECK(epoch1 >= 22 * 32 - 0.5);
  CHECK(epoch1 <= 31 * 32 + 0.5);
  CHECK(images_counted(epochs[1], "epoch_seconds") == doctest::Approx(1024).epsilon(1e-9));
  const auto summary = events(out.path / "r", "summary");
  REQUIRE(summary.size() == 1);
  const double run_images = images_counted(summary[0], "train_seconds");
  CHECK(run_images >= 54 * 32 - 0.5);
  CHECK(run_images <= 63 * 32 + 0.5);
  // The micro-batches: this process's and the earlier one's make the run's 64.
  const auto& counts = summary[0]["micro_batches"];
  CHECK(counts["completed"].get<int64_t>() + counts["completed_before_resume"].get<int64_t>() == 64);
  CHECK(counts["completed_before_resume"].get<int64_t>() < 10);
  const auto resume = events(out.path / "r", "resume");
  REQUIRE(resume.size() == 1);
  CHECK(resume[0]["from"] == "snapshot");
  CHECK(resume[0]["micro_batch"] == 10);
}

TEST_CASE("a lockstep rollback to a snapshot: the epoch line counts the images of the replay only") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  scratch_dir out;
  // Stage 3 crashes at tick 15, after the cut before micro-batch 10; every stage rolls back to it
  // and starts its epoch clock again there.
  train_options o;
  o.config = "ci_smoke";
  o.sets = {"output.dir=" + out.path.string(), "output.name=r",
            "runtime.mode=lockstep",           "output.checkpoint_every_steps=10",
            "faults.recovery=global",          "faults.crash_at_tick=[-1,-1,15,-1,-1]"};
  REQUIRE(train_command(o) == 0);
  const auto failures = events(out.path / "r", "failure");
  REQUIRE(failures.size() == 1);
  REQUIRE(failures[0]["restored_from"] == "snapshot");
  const auto epochs = events(out.path / "r", "epoch");
  REQUIRE(epochs.size() == 1);
  const double images = images_counted(epochs[0], "epoch_seconds");
  CHECK(images >= 22 * 32 - 0.5);
  CHECK(images <= 31 * 32 + 0.5);
}

TEST_CASE("--resume refuses a change of what the run trains: exit code 2, the key named, nothing written") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  scratch_dir out;
  const fs::path run = stopped_run(out.path, "r", 2, 1);
  const auto before = contents(run);
  for (const std::string set :
       {"training.micro_batch=16", "model.arch=fashion_small", "data.train_limit=512", "training.seed=3",
        "training.optimizer.base_lr=0.2", "runtime.precision=bf16", "output.name=elsewhere"}) {
    CAPTURE(set);
    train_options o;
    o.resume = run.string();
    o.sets = {set};
    const auto [code, said] = train_quietly(o);
    CHECK(code == 2);
    const std::string key = set.substr(0, set.find('='));
    CHECK_MESSAGE(said.find(key + ": a resumed run cannot change it") != std::string::npos, said);
    CHECK(contents(run) == before);
  }
}

TEST_CASE("--resume with training.epochs raised: config.yaml says so and a resume line records the change") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  scratch_dir out;
  const fs::path run = stopped_run(out.path, "r", 2, 1);
  train_options o;
  o.resume = run.string();
  // micro_batch as it was: no change; epochs and the loader's threads: changes a resume may make.
  o.sets = {"training.epochs=3", "training.micro_batch=32", "data.workers=2"};
  REQUIRE(train_command(o) == 0);
  const petra::config::run_config saved = petra::config::load_config((run / "config.yaml").string());
  CHECK(saved.training.epochs == 3);  // `petra train <run>/config.yaml` repeats the run as it went on
  CHECK(saved.data.workers == 2);
  CHECK(saved.output.name.empty());
  const auto resume = events(run, "resume");
  REQUIRE(resume.size() == 1);
  CHECK(resume[0]["from"] == "checkpoint");
  CHECK(resume[0]["epoch"] == 2);
  CHECK(resume[0]["changed"] == nlohmann::json::parse(R"([{"key":"data.workers","from":"1","to":"2"},
                                                          {"key":"training.epochs","from":"2","to":"3"}])"));
  const auto epochs = events(run, "epoch");
  REQUIRE(epochs.size() == 3);
  CHECK(epochs[2]["epoch"] == 3);
}

TEST_CASE(
    "--stop-after-epoch that cannot stop the run where asked: exit code 2, saying why, nothing written") {
  scratch_dir out;
  for (const std::string value : {"0", "-1", "2"}) {  // ci_smoke trains 1 epoch
    CAPTURE(value);
    const auto r = run_petra("train ci_smoke --stop-after-epoch " + value +
                             " --set output.dir=" + (out.path / "runs").string());
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find("--stop-after-epoch") != std::string::npos, r.output);
    CHECK_FALSE(fs::exists(out.path / "runs"));
  }
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  const fs::path run = stopped_run(out.path, "past", 3, 2);
  const auto before = contents(run);
  train_options o;
  o.resume = run.string();
  o.stop_after_epoch = 1;  // the run stopped after epoch 2
  auto [code, said] = train_quietly(o);
  CHECK(code == 2);
  CHECK_MESSAGE(said.find("is past the end of epoch 1 already") != std::string::npos, said);
  CHECK(contents(run) == before);

  // A snapshot inside a phase that runs on to the end of epoch 2: it can stop there only.
  train_options first;
  first.config = "ci_smoke";
  first.sets = {"output.dir=" + out.path.string(),
                "output.name=cut",
                "training.epochs=2",
                "data.train_limit=256",
                "data.test_limit=64",
                "output.checkpoint_every_steps=3"};
  first.stop_after_snapshots = 1;
  REQUIRE(train_command(first) == 0);
  const auto cut_before = contents(out.path / "cut");
  o.resume = (out.path / "cut").string();
  std::tie(code, said) = train_quietly(o);
  CHECK(code == 2);
  CHECK_MESSAGE(said.find("name epoch 2 or later") != std::string::npos, said);
  CHECK(contents(out.path / "cut") == cut_before);
}

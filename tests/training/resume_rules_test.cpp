// What a resume may change (training/resume_rules.hpp), and what a resumed process's figures count:
// the images an epoch line counts over a time that started inside the epoch (training/throughput.hpp),
// the window of its first step line. Plain functions, no run needed.
#include "training/resume_rules.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "tests/scratch_dir.hpp"
#include "training/run_dir.hpp"
#include "training/step_lines.hpp"
#include "training/throughput.hpp"

using namespace petra;

TEST_CASE("resume rules: how long, where and how it runs and what it writes may change, not what it trains") {
  for (const char* key : {"training.epochs", "data.workers", "runtime.mode", "runtime.threads",
                          "pipeline.nodes", "pipeline.stage_blocks", "faults.max_restarts",
                          "output.metrics_every_steps", "output.trace", "tls.cert", "nodes"}) {
    CAPTURE(key);
    CHECK(resume_change_refusal(key).empty());
  }
  for (const char* key :
       {"training.micro_batch", "training.accumulation", "training.method", "training.seed",
        "training.optimizer.base_lr", "training.schedule.kind", "training.drain_at_epoch_end", "model.arch",
        "data.train_limit", "data.path", "runtime.precision", "output.dir", "output.name"}) {
    CAPTURE(key);
    CHECK_FALSE(resume_change_refusal(key).empty());
  }
}

TEST_CASE(
    "resume rules: the first change refused names its key, both values and where the new one came from") {
  const config::run_config saved = config::load_config("ci_smoke");
  const auto allowed = check_resume_changes(saved, config::load_config("ci_smoke", {"training.epochs=4"}));
  REQUIRE(allowed.size() == 1);
  CHECK(allowed[0].key == "training.epochs");
  CHECK_THROWS_WITH_AS(
      check_resume_changes(saved,
                           config::load_config("ci_smoke", {"training.epochs=4", "training.micro_batch=16"})),
      doctest::Contains("training.micro_batch: a resumed run cannot change it (32 in config.yaml, 16 in "
                        "--set training.micro_batch=16)"),
      config::config_error);
}

TEST_CASE(
    "throughput: an epoch's images in a time that started inside it are those of its micro-batches after") {
  // 10 micro-batches of 32 per epoch, the last one of 20 (308 images).
  CHECK(timed_epoch_images(2, 10, 32, 308, 0) == 308);   // the clock started before epoch 2
  CHECK(timed_epoch_images(2, 10, 32, 308, 10) == 308);  // ... at its start
  CHECK(timed_epoch_images(2, 10, 32, 308, 13) == 308 - 3 * 32);
  CHECK(timed_epoch_images(2, 10, 32, 308, 19) == 20);  // the last, short one only
  CHECK(timed_epoch_images(2, 10, 32, 308, 20) == 0);   // after the epoch: none of it
  CHECK(timed_epoch_images(1, 10, 32, 308, 25) == 0);
  CHECK(images_per_second(300, 1.5) == 200.0);
  CHECK(images_per_second(300, 0.0) == 0.0);
}

TEST_CASE(
    "step lines: a resumed process's first window holds what it trained, not the totals it resumed with") {
  testing::scratch_dir out;
  run_dir dir = run_dir::create((out.path / "r").string());
  optimizer_settings optimizer;
  step_lines lines(2, optimizer, dir, {}, /*resumed=*/true);
  // Resumed from a cut whose totals hold 10 micro-batches of loss 5 trained by an earlier process;
  // this one trains micro-batches of loss 1.
  run_totals totals;
  totals.micro_batches = 10, totals.samples = 320, totals.loss_sum = 50;
  stage_window w;
  w.stage = 0;
  w.optimizer_steps = 10;
  lines.observe(1, 10, totals, {w}, totals.micro_batches);  // its first report: where its window starts
  totals.micro_batches += 1, totals.samples += 32, totals.loss_sum += 1;
  w.optimizer_steps += 1;
  lines.observe(1, totals.micro_batches, totals, {w}, totals.micro_batches);
  std::ifstream in(out.path / "r" / "metrics.jsonl");
  std::string line;
  REQUIRE(std::getline(in, line));
  const nlohmann::json step = nlohmann::json::parse(line);
  CHECK(step["step"] == 11);
  CHECK(step["loss"] == 1.0);  // 51 / 11 had it counted the earlier process's part
}

TEST_CASE("step lines: a window's losses are those up to its end, though the loss ran ahead of it") {
  testing::scratch_dir out;
  run_dir dir = run_dir::create((out.path / "w").string());
  step_lines lines(2, optimizer_settings{}, dir);
  // The loss has scored micro-batches 1..4 (loss 1 each, then 3 each) before stage 1's window of
  // steps 1..2 (micro-batches 1 and 2) ends: its line has the first two only, the next the rest.
  run_totals totals;
  stage_window w;
  w.stage = 0;
  for (int m = 1; m <= 4; ++m) {
    totals.micro_batches = m, totals.samples = 32 * m, totals.loss_sum += m <= 2 ? 1 : 3;
    w.optimizer_steps = 0;
    lines.observe(1, m, totals, {w}, 0);
  }
  w.optimizer_steps = 2;
  lines.observe(1, 2, totals, {w}, 2);
  w.optimizer_steps = 4;
  lines.observe(1, 4, totals, {w}, 4);  // nothing new was scored: the window's losses were seen already
  std::ifstream in(out.path / "w" / "metrics.jsonl");
  std::vector<nlohmann::json> steps;
  for (std::string line; std::getline(in, line);) steps.push_back(nlohmann::json::parse(line));
  REQUIRE(steps.size() == 2);
  CHECK(steps[0]["step"] == 2);
  CHECK(steps[0]["loss"] == 1.0);
  CHECK(steps[1]["step"] == 4);
  CHECK(steps[1]["loss"] == 3.0);
}

// `petra train` with training.method forward_gradient: the smoke preset learns under each guess and
// target in the simulator; a run stopped after an epoch resumes; the fault keys the actor runtimes
// do not inject with this method are refused (exit code 2) rather than ignored.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/commands.hpp"
#include "tests/app/refused_train.hpp"
#include "tests/files.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::train_options;
using petra::app::train_command;

namespace {

struct scratch_dir {
  fs::path path;
  scratch_dir() {
    path = fs::temp_directory_path() / ("petra-fg-test-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch_dir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("ci_smoke trains under forward_gradient: local and random guesses, global and local targets") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  for (const char* variant : {"guess=local", "guess=random", "target=local"}) {
    CAPTURE(variant);
    scratch_dir out;
    train_options o;
    o.config = "ci_smoke";
    o.sets = {"output.dir=" + out.path.string(), "output.name=fg", "training.epochs=2",
              "training.method=forward_gradient", std::string("training.forward_gradient.") + variant};
    REQUIRE(train_command(o) == 0);
    const auto metrics = petra::testing::json_lines(out.path / "fg" / "metrics.jsonl");
    REQUIRE(metrics.size() == 3);  // two epochs and the summary
    CHECK(metrics[1]["train_loss"].get<double>() < metrics[0]["train_loss"].get<double>());
    CHECK(metrics[1]["train_loss"].get<double>() < 2.28);     // chance is ln 10 = 2.30
    CHECK(metrics[1]["test_accuracy"].get<double>() > 0.15);  // chance is 0.1 (PETRA: 0.25 here)
    const auto& stages = metrics[1]["stages"];
    const std::size_t J = stages.size();
    REQUIRE(J > 2);
    const bool local = std::string(variant) == "target=local";
    // Delays as docs/design.md §1 numbers stages: J − j + 1 ticks for j < J (global target), 0 otherwise.
    CHECK(stages[0]["expected_delay_ticks"].get<int64_t>() == (local ? 0 : static_cast<int64_t>(J)));
    CHECK(stages[0]["delay_ticks"].contains(local ? "0" : std::to_string(J)));
    CHECK(stages[J - 1]["delay_ticks"].contains("0"));
    // The cosine diagnostic on 1 in runtime.inversion_sample_every (4) micro-batches, stages j < J.
    CHECK(stages[0]["diagnostic_gradient_cosine_samples"].get<int64_t>() > 0);
    CHECK(std::abs(stages[0]["diagnostic_gradient_cosine_mean"].get<double>()) <= 1.0);
    CHECK_FALSE(stages[J - 1].contains("diagnostic_gradient_cosine_mean"));
  }
}

TEST_CASE("a forward_gradient run evaluates, and resumes (its auxiliary heads are checkpointed)") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  train_options o;
  o.config = "ci_smoke";
  o.sets = {"output.dir=" + out.path.string(),
            "output.name=fg",
            "training.method=forward_gradient",
            "data.train_limit=256",
            "data.test_limit=128",
            "training.epochs=2"};
  o.stop_after_epoch = 1;
  REQUIRE(train_command(o) == 0);
  CHECK(petra::app::eval_command((out.path / "fg").string(), {}) == 0);
  train_options again;
  again.resume = (out.path / "fg").string();
  REQUIRE(train_command(again) == 0);
  const auto metrics = petra::testing::json_lines(out.path / "fg" / "metrics.jsonl");
  REQUIRE(metrics.size() == 4);  // epoch 1, the resume, epoch 2 after it, the summary
  CHECK(metrics[1]["event"] == "resume");
  CHECK(metrics[2]["epoch"].get<int>() == 2);
}

TEST_CASE(
    "forward_gradient with faults it does not inject is refused: exit code 2, a clear message, nothing "
    "written") {
  scratch_dir out;
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"runtime.mode=async", "faults.jitter_ms=[5]"},
       "faults.jitter_ms: runtime.mode async runs forward_gradient without jitter"},
      {{"runtime.mode=async", "faults.reorder=[0.1]"},
       "faults.reorder: runtime.mode async runs forward_gradient without jitter, reordering"},
      {{"runtime.mode=lockstep", "faults.kill_node=[127.0.0.1:1@1]"},
       "faults.kill_node: runtime.mode lockstep runs forward_gradient without jitter, reordering or node "
       "kills"},
      {{"runtime.mode=lockstep", "faults.jitter_ms=[5]"},
       "faults.jitter_ms: runtime.mode lockstep counts time"},
      {{"runtime.mode=simulate", "faults.drop=[0.1]"},
       "faults.drop: runtime.mode simulate cannot inject faults"}};
  for (const auto& [sets, message] : refused) {
    CAPTURE(message);
    std::vector<std::string> all = {"training.method=forward_gradient"};
    all.insert(all.end(), sets.begin(), sets.end());
    petra::testing::check_train_refused("ci_smoke", all, message, out.path / "runs");
  }
  train_options o;  // and tick_order backward_first in the simulator
  o.config = "ci_smoke";
  o.sets = {"training.method=forward_gradient", "training.tick_order=backward_first",
            "output.dir=" + (out.path / "runs").string()};
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  CHECK(train_command(o) == 2);
  std::cerr.rdbuf(old);
  CHECK(captured.str().find("training.tick_order") != std::string::npos);
}

// Stop after an epoch and resume: lockstep ends bit-identical to an uninterrupted run, and the
// resumed run's metrics go on where the stopped one's ended.
#include <filesystem>
#include <fstream>
#include <functional>

#include "app/commands.hpp"
#include "tests/actors/metrics_lines.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

namespace {

/// Trains `sets` on the tiny model twice under `dir`: straight through ("straight"), and stopped
/// after epoch 1 then resumed ("interrupted"); `between` runs between the stop and the resume.
void straight_and_interrupted(const fs::path& dir, const std::vector<std::string>& sets,
                              const std::function<void()>& between = {}) {
  petra::train_options straight{"tiny", sets, "", 0};
  straight.sets.push_back("output.name=straight");
  REQUIRE(app::train_command(straight) == 0);
  petra::train_options first{"tiny", sets, "", 1};
  first.sets.push_back("output.name=interrupted");
  REQUIRE(app::train_command(first) == 0);
  if (between) between();
  petra::train_options resume{"", {}, (dir / "interrupted").string(), 0};
  REQUIRE(app::train_command(resume) == 0);
}

std::vector<std::string> tiny_sets(const fs::path& dir, const std::string& mode) {
  return {"runtime.mode=" + mode,           "training.epochs=2",
          "data.train_limit=256",           "data.test_limit=64",
          "output.dir=" + dir.string(),     "output.checkpoint_every_steps=5",
          "pipeline.stage_blocks=[1,2,1,1]"};
}

}  // namespace

TEST_CASE("lockstep, drained epochs: stop after epoch 1 and resume = two epochs straight, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-resume-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = tiny_sets(dir, "lockstep");
  sets.push_back("training.drain_at_epoch_end=true");
  straight_and_interrupted(dir, sets, [&] {
    std::ofstream(dir / "interrupted" / "checkpoint.safetensors.tmp.Ab12Cd") << "a write killed half-way";
  });

  trained a, b;
  a.weights = load_safetensors((dir / "straight" / "checkpoint.safetensors").string()).tensors;
  b.weights = load_safetensors((dir / "interrupted" / "checkpoint.safetensors").string()).tensors;
  CHECK(differing(a, b) == 0);
  std::ifstream metrics(dir / "interrupted" / "metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line);) ++lines;
  CHECK(lines == 4);  // epoch 1, the resume, epoch 2 (after it), summary
  CHECK_FALSE(fs::exists(dir / "interrupted" / "checkpoint.safetensors.tmp.Ab12Cd"));
  fs::remove_all(dir);
}

TEST_CASE("stop after epoch 1, resume: the step lines go on with the run's epoch, position and seconds") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-resume-steps-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = tiny_sets(dir, "simulate");
  sets.push_back("output.metrics_every_steps=2");
  straight_and_interrupted(dir, sets);
  // (The epoch lines differ: the stop drains the pipeline, which the uninterrupted run does not.)
  check_step_lines(dir / "straight", dir / "interrupted");
  fs::remove_all(dir);
}

TEST_CASE("training.bn_recalibration changes the BN statistics only, and resume = straight = simulate") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-resume-recal-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto sets = tiny_sets(dir, "lockstep");
  sets.insert(sets.end(), {"training.drain_at_epoch_end=true", "training.bn_recalibration=2"});
  straight_and_interrupted(dir, sets);
  const auto train = [&](std::vector<std::string> more, const std::string& name) {
    more.push_back("output.name=" + name);
    REQUIRE(app::train_command(petra::train_options{"tiny", more, "", 0}) == 0);
  };
  auto plain = tiny_sets(dir, "lockstep");
  plain.push_back("training.drain_at_epoch_end=true");
  train(plain, "plain");
  auto simulated = tiny_sets(dir, "simulate");
  simulated.insert(simulated.end(), {"training.drain_at_epoch_end=true", "training.bn_recalibration=2"});
  train(simulated, "simulated");

  const auto load = [&](const std::string& name) {
    trained t;
    t.weights = load_safetensors((dir / name / "checkpoint.safetensors").string()).tensors;
    return t;
  };
  const trained straight = load("straight"), without = load("plain");
  CHECK(differing(straight, load("interrupted")) == 0);
  CHECK(differing(straight, load("simulated")) == 0);
  // The running statistics do not enter training: the weights are those of the run without.
  REQUIRE(straight.weights.size() == without.weights.size());
  int statistics = 0, changed = 0;
  for (std::size_t i = 0; i < straight.weights.size(); ++i) {
    const bool differs =
        differing(trained{{}, {}, {straight.weights[i]}}, trained{{}, {}, {without.weights[i]}}) != 0;
    if (straight.weights[i].first.find("running_") != std::string::npos) {
      ++statistics;
      changed += differs ? 1 : 0;
    } else {
      CHECK_MESSAGE(!differs, straight.weights[i].first);
    }
  }
  CHECK(statistics > 0);
  CHECK(changed == statistics);
  fs::remove_all(dir);
}

TEST_CASE("AdamW: its moments are in the checkpoint, and resume = straight = simulate, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-resume-adamw-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<std::string> adamw = {"training.optimizer.kind=adamw", "training.optimizer.base_lr=0.002",
                                          "training.optimizer.weight_decay=0.05"};
  auto sets = tiny_sets(dir, "lockstep");
  sets.push_back("training.drain_at_epoch_end=true");
  sets.insert(sets.end(), adamw.begin(), adamw.end());
  straight_and_interrupted(dir, sets);
  auto simulated = tiny_sets(dir, "simulate");
  simulated.push_back("training.drain_at_epoch_end=true");
  simulated.insert(simulated.end(), adamw.begin(), adamw.end());
  simulated.push_back("output.name=simulated");
  REQUIRE(app::train_command(petra::train_options{"tiny", simulated, "", 0}) == 0);

  const auto load = [&](const std::string& name) {
    trained t;
    t.weights = load_safetensors((dir / name / "checkpoint.safetensors").string()).tensors;
    return t;
  };
  const trained straight = load("straight");
  CHECK(differing(straight, load("interrupted")) == 0);
  CHECK(differing(straight, load("simulated")) == 0);
  int params = 0, first = 0, second = 0;
  for (const auto& [name, value] : straight.weights) {
    params += name.rfind("param/", 0) == 0 ? 1 : 0;
    first += name.rfind("momentum/", 0) == 0 ? 1 : 0;
    second += name.rfind("second_moment/", 0) == 0 ? 1 : 0;
  }
  CHECK(params > 0);
  CHECK(first == params);
  CHECK(second == params);
  fs::remove_all(dir);
}

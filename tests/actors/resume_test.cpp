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

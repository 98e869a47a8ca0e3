// Stop and resume in lockstep ends bit-identical to an uninterrupted run.
#include <filesystem>
#include <fstream>

#include "app/commands.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

TEST_CASE("lockstep, drained epochs: stop after epoch 1 and resume = two epochs straight, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = fs::temp_directory_path() / ("petra-resume-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<std::string> sets = {"runtime.mode=lockstep",
                                         "training.epochs=2",
                                         "data.train_limit=256",
                                         "data.test_limit=64",
                                         "output.dir=" + dir.string(),
                                         "output.checkpoint_every_steps=5",
                                         "pipeline.stage_blocks=[1,2,1,1]",
                                         "training.drain_at_epoch_end=true"};
  petra::train_options straight{"tiny", sets, "", 0};
  straight.sets.push_back("output.name=straight");
  REQUIRE(app::train_command(straight) == 0);

  petra::train_options first{"tiny", sets, "", 1};
  first.sets.push_back("output.name=interrupted");
  REQUIRE(app::train_command(first) == 0);
  std::ofstream(dir / "interrupted" / "checkpoint.safetensors.tmp.Ab12Cd") << "a write killed half-way";
  petra::train_options resume{"", {}, (dir / "interrupted").string(), 0};
  REQUIRE(app::train_command(resume) == 0);

  trained a, b;
  a.weights = load_safetensors((dir / "straight" / "checkpoint.safetensors").string()).tensors;
  b.weights = load_safetensors((dir / "interrupted" / "checkpoint.safetensors").string()).tensors;
  CHECK(differing(a, b) == 0);
  std::ifstream metrics(dir / "interrupted" / "metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line);) ++lines;
  CHECK(lines == 3);  // epoch 1, epoch 2 (after the resume), summary
  CHECK_FALSE(fs::exists(dir / "interrupted" / "checkpoint.safetensors.tmp.Ab12Cd"));
  fs::remove_all(dir);
}

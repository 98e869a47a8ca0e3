// Forward gradients resume from a checkpoint: it holds the auxiliary heads beside their stages, so
// stopping after epoch 1 and resuming ends bit-identical to two epochs straight (simulate and
// lockstep); and with evaluation waves, lockstep = simulate, test results included.
#include <filesystem>
#include <fstream>

#include "app/commands.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("petra-fg-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

trained checkpoint_of(const fs::path& run) {
  trained t;
  t.weights = load_safetensors((run / "checkpoint.safetensors").string()).tensors;
  return t;
}

std::vector<nlohmann::json> fg_epoch_lines(const fs::path& run) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("epoch") && j.contains("test_accuracy")) out.push_back(j);
  }
  return out;
}

}  // namespace

TEST_CASE("forward_gradient: stop after epoch 1 and resume = two epochs straight, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* mode : {"simulate", "lockstep"}) {
    for (const char* target : {"global", "local"}) {
      INFO(mode, " target ", target);
      const fs::path dir = scratch(std::string("resume-") + mode + "-" + target);
      const std::vector<std::string> sets = {std::string("runtime.mode=") + mode,
                                             "training.method=forward_gradient",
                                             std::string("training.forward_gradient.target=") + target,
                                             "training.forward_gradient.aux_width=8",
                                             "training.epochs=2",
                                             "training.drain_at_epoch_end=true",
                                             "data.train_limit=256",
                                             "data.test_limit=64",
                                             "pipeline.stage_blocks=[1,2,1,1]",
                                             "output.progress=false",
                                             "output.dir=" + dir.string()};
      train_options straight{"tiny", sets, "", 0};
      straight.sets.push_back("output.name=straight");
      REQUIRE(app::train_command(straight) == 0);
      train_options first{"tiny", sets, "", 1};
      first.sets.push_back("output.name=interrupted");
      REQUIRE(app::train_command(first) == 0);
      const trained after_one = checkpoint_of(dir / "interrupted");
      int aux = 0;
      for (const auto& [name, value] : after_one.weights) aux += name.rfind("aux/", 0) == 0;
      CHECK(aux > 0);  // the auxiliary heads are checkpointed with their stages
      train_options resume{"", {}, (dir / "interrupted").string(), 0};
      REQUIRE(app::train_command(resume) == 0);
      CHECK(differing(checkpoint_of(dir / "straight"), checkpoint_of(dir / "interrupted")) == 0);
      const auto a = fg_epoch_lines(dir / "straight"), b = fg_epoch_lines(dir / "interrupted");
      REQUIRE(a.size() == 2);
      REQUIRE(b.size() == 2);
      CHECK(a[1]["test_accuracy"] == b[1]["test_accuracy"]);
      CHECK(a[1]["train_loss"] == b[1]["train_loss"]);
      fs::remove_all(dir);
    }
  }
}

TEST_CASE("forward_gradient with evaluation waves (epochs not drained): lockstep = simulate, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  const fs::path dir = scratch("waves");
  for (const char* mode : {"simulate", "lockstep"}) {
    const std::vector<std::string> sets = {std::string("runtime.mode=") + mode,
                                           "training.method=forward_gradient",
                                           "training.forward_gradient.aux_width=8",
                                           "training.epochs=2",
                                           "data.train_limit=256",
                                           "data.test_limit=128",
                                           "pipeline.stage_blocks=[1,2,1,1]",
                                           "output.progress=false",
                                           "output.dir=" + dir.string(),
                                           std::string("output.name=") + mode};
    REQUIRE(app::train_command({"tiny", sets, "", 0}) == 0);
  }
  CHECK(differing(checkpoint_of(dir / "simulate"), checkpoint_of(dir / "lockstep")) == 0);
  const auto a = fg_epoch_lines(dir / "simulate"), b = fg_epoch_lines(dir / "lockstep");
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  for (std::size_t e = 0; e < a.size(); ++e) {
    CHECK(a[e]["test_accuracy"] == b[e]["test_accuracy"]);
    CHECK(a[e]["test_loss"] == b[e]["test_loss"]);
    CHECK(a[e]["train_loss"] == b[e]["train_loss"]);
  }
  fs::remove_all(dir);
}

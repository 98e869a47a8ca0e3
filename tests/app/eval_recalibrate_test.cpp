// `petra eval --bn-recalibrate N`: the checkpoint's running BN statistics re-estimated first from N
// training micro-batches under its weights, as training.bn_recalibration does before a drained
// epoch's evaluation; refused where there is nothing to recalibrate.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/app/summary_accuracy.hpp"
#include "tests/petra_command.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::testing::run_petra;
using petra::testing::scratch_dir;
using petra::testing::summary_accuracy;

namespace {

/// The accuracy `petra eval` printed ("14.65").
std::string printed_accuracy(const std::string& output) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(output, m, std::regex("accuracy ([0-9.]+)%")), output);
  return m[1].str();
}

}  // namespace

TEST_CASE("petra eval --bn-recalibrate N tests the weights as a run with training.bn_recalibration: N does") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  const std::string common = "train ci_smoke --set output.dir=" + out.path.string() +
                             " --set training.epochs=1 --set data.train_limit=512 --set data.test_limit=256"
                             " --set training.drain_at_epoch_end=true";
  const auto recal = run_petra(common + " --set output.name=recal --set training.bn_recalibration=4");
  REQUIRE_MESSAGE(recal.code == 0, recal.output);
  const auto plain = run_petra(common + " --set output.name=plain");
  REQUIRE_MESSAGE(plain.code == 0, plain.output);
  const fs::path plain_run = out.path / "plain";

  const auto as_trained = run_petra("eval " + plain_run.string());
  REQUIRE_MESSAGE(as_trained.code == 0, as_trained.output);
  CHECK(printed_accuracy(as_trained.output) == summary_accuracy(plain_run));
  CHECK(as_trained.output.find("re-estimated") == std::string::npos);

  // The same weights (the statistics do not enter training), the same 4 micro-batches.
  const auto recalibrated = run_petra("eval " + plain_run.string() + " --bn-recalibrate 4");
  REQUIRE_MESSAGE(recalibrated.code == 0, recalibrated.output);
  CHECK(printed_accuracy(recalibrated.output) == summary_accuracy(out.path / "recal"));
  CHECK(recalibrated.output.find("(BN statistics re-estimated from 4 training micro-batches)") !=
        std::string::npos);

  for (const char* bad : {"0", "-2", "many"}) {
    const auto refused = run_petra("eval " + plain_run.string() + " --bn-recalibrate " + bad);
    INFO(refused.output);
    CHECK(refused.code == 2);
    CHECK(refused.output.find("--bn-recalibrate") != std::string::npos);
  }
}

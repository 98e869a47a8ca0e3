// `petra train` in bf16: ci_smoke learns in simulate and in lockstep, the two runs agree (lockstep
// ≡ simulate, bit for bit, in bf16 too), and a CPU without bf16 instructions is refused with exit 2
// before anything is written.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compute/cpu/bf16_support.hpp"
#include "tests/backends/forced_cpu_flags.hpp"
#include "tests/petra_command.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::testing::run_petra;

using petra::testing::scratch_dir;

namespace {

std::vector<nlohmann::json> read_metrics(const fs::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

const char* fashion_mnist = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

}  // namespace

TEST_CASE("ci_smoke in bf16 lowers the loss in simulate and in lockstep, with the same numbers") {
  if (!fs::exists(fashion_mnist))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  const std::string why = petra::missing_bf16_instructions(petra::cpu_flags());
  const std::string precision = why.empty() ? "bf16" : "bf16_emulated";  // the same rounding
  if (!why.empty()) MESSAGE("runs bf16_emulated: " << why);
  scratch_dir out;
  std::vector<std::vector<nlohmann::json>> runs;
  for (const std::string mode : {"simulate", "lockstep"}) {
    const auto result = run_petra(
        "train ci_smoke --set runtime.precision=" + precision + " --set runtime.mode=" + mode +
        " --set training.epochs=2 --set output.dir=" + out.path.string() + " --set output.name=" + mode);
    INFO(result.output);
    REQUIRE(result.code == 0);
    runs.push_back(read_metrics(out.path / mode / "metrics.jsonl"));
    const auto& metrics = runs.back();
    REQUIRE(metrics.size() == 3);  // two epochs and the summary
    CHECK(metrics[1]["train_loss"].get<double>() < metrics[0]["train_loss"].get<double>());
    CHECK(metrics[1]["train_loss"].get<double>() < 2.3);  // chance is ln 10 = 2.30
  }
  for (int epoch : {0, 1}) {
    CHECK(runs[0][epoch]["train_loss"] == runs[1][epoch]["train_loss"]);
    CHECK(runs[0][epoch]["test_loss"] == runs[1][epoch]["test_loss"]);
  }
}

TEST_CASE("petra train: bf16 on a CPU without bf16 instructions exits 2 naming the key, writes nothing") {
  scratch_dir out;
  const petra::testing::forced_cpu_flags no_flags("fpu sse2 avx2 avx512f");
  const auto result = run_petra("train ci_smoke --set runtime.precision=bf16 --set output.dir=" +
                                (out.path / "runs").string() + " --set output.name=refused");
  INFO(result.output);
  CHECK(result.code == 2);
  CHECK(result.output.find("runtime.precision: bf16") != std::string::npos);
  CHECK(result.output.find("avx512_bf16") != std::string::npos);
  CHECK_FALSE(fs::exists(out.path / "runs" / "refused"));
}

// `petra report`'s plot of where each stage's time goes: the epoch lines' busy and wait seconds as
// shares of the epochs' wall time, stacked per stage, one panel per run that measured them.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/report_plots.hpp"
#include "tests/files.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace petra::app;

namespace {

struct waits_scratch {
  fs::path path = fs::temp_directory_path() / ("petra-report-waits-" + std::to_string(::getpid()));
  waits_scratch() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~waits_scratch() { fs::remove_all(path); }
};

/// A run of two stages and two epochs of 10 s; with `waits`, stage j computed 2j s, waited 1 s for
/// input and j s for a gradient, and spent 0.5 s otherwise in each epoch; without, the fields as
/// simulate writes them (no busy time, all of it "other").
fs::path write_run(const fs::path& dir, bool waits) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.yaml") << "runtime:\n  mode: " << (waits ? "lockstep" : "simulate") << "\n";
  std::ofstream metrics(dir / "metrics.jsonl");
  for (int epoch = 1; epoch <= 2; ++epoch) {
    json stages = json::array();
    for (int j = 1; j <= 2; ++j) {
      json s = {
          {"stage", j}, {"busy_seconds", waits ? 2.0 * j : 0.0}, {"busy_fraction", waits ? 0.2 * j : 0.0}};
      s["wait_input_seconds"] = waits ? 1.0 : 0.0;
      s["wait_gradient_seconds"] = waits ? 1.0 * j : 0.0;
      s["other_seconds"] = waits ? 0.5 : 10.0;
      s["idle_fraction"] = waits ? (1.0 + j) / 10 : 0.0;
      stages.push_back(s);
    }
    metrics << json{{"event", "epoch"},      {"epoch", epoch},        {"test_accuracy", 0.5},
                    {"epoch_seconds", 10.0}, {"images_per_s", 100.0}, {"stages", stages}}
                   .dump()
            << "\n";
  }
  return dir;
}

}  // namespace

TEST_CASE("report: each stage's computing, waits and the rest as shares of the wall time, a panel per run") {
  waits_scratch out;
  std::vector<run_data> runs = {read_run(write_run(out.path / "measured", true).string()),
                                read_run(write_run(out.path / "simulated", false).string())};
  runs[0].name = "measured", runs[1].name = "simulated";
  const report_plot p = draw_stage_time(out.path.string(), runs);
  REQUIRE(p.missing.empty());
  CHECK(fs::file_size(out.path / "waits.png") > 0);
  const std::string script = petra::testing::file_text(out.path / "waits.gp");
  // Stage 1: 2 s computing, 1 s for input, 1 s for a gradient, 0.5 s else, of 10 s, in each epoch;
  // stage 2: 4, 1, 2 and 0.5 s.
  CHECK(script.find("$w0 << EOD\n1 20 10 10 5\n2 40 10 20 5\nEOD") != std::string::npos);
  for (const char* label : {"computing", "waiting for input", "waiting for a gradient", "other"})
    CHECK(script.find(label) != std::string::npos);
  CHECK(script.find("$w1") == std::string::npos);  // the simulated run measured no waits
  REQUIRE(p.notes.size() == 1);
  CHECK(p.notes[0].find("simulated: no per-stage waits") == 0);

  const report_plot none = draw_stage_time((out.path / "none").string(), {runs[1]});
  CHECK(none.missing.find("no per-stage waits") == 0);
}

TEST_CASE("report: a lockstep run's report has the plot of its stages' waits") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  waits_scratch out;
  petra::train_options train;
  train.config = "ci_smoke";
  train.sets = {"output.dir=" + out.path.string(), "output.name=x",        "output.progress=false",
                "runtime.mode=lockstep",           "data.train_limit=256", "data.test_limit=64"};
  REQUIRE(train_command(train) == 0);
  report_options options;
  options.runs = {(out.path / "x").string()};
  REQUIRE(report_command(options) == 0);
  const fs::path dir = out.path / "x" / "report";
  CHECK(fs::exists(dir / "waits.png"));
  CHECK(petra::testing::file_text(dir / "report.html").find("Where each stage") != std::string::npos);
  // ci_smoke has 5 stages: a row each.
  const std::string script = petra::testing::file_text(dir / "waits.gp");
  CHECK(script.find("\n5 ") != std::string::npos);
  CHECK(script.find("\n6 ") == std::string::npos);
}

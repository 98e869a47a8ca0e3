// `petra report`: a ci_smoke run and fixture runs with step lines give every plot their data allow
// (each a PNG that decodes, each embedded in report.html), several runs overlay, a run without step
// lines says what is missing, a rebalance is marked where it happened, and Chromium renders the page.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "tests/app/png_reader.hpp"
#include "tests/app/report_fixture.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace petra::testing;
using petra::test::decode_png;

namespace {

/// Every PNG of `dir` decodes to a non-empty image, is embedded in report.html (once) and nothing
/// in the page points outside it. Returns the PNGs' file names.
std::set<std::string> check_report_dir(const fs::path& dir) {
  const std::string html = file_text(dir / "report.html");
  REQUIRE_FALSE(html.empty());
  std::set<std::string> pngs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".png") pngs.insert(e.path().filename().string());
  for (const auto& png : pngs) {
    INFO(png);
    const auto image = decode_png((dir / png).string());
    CHECK(image.width > 0);
    CHECK(image.height > 0);
    CHECK(html.find("data-file=\"" + png + "\"") != std::string::npos);
    CHECK(fs::exists(dir / (fs::path(png).stem().string() + ".gp")));
  }
  // Each embedded image is base64 of a PNG ("\x89PNG\r\n\x1a\n" encodes as iVBORw0KGgo).
  const std::string img = "<img src=\"data:image/png;base64,";
  size_t embedded = 0;
  for (size_t at = html.find(img); at != std::string::npos; at = html.find(img, at + 1)) {
    const size_t begin = at + img.size(), end = html.find('"', begin);
    REQUIRE(end != std::string::npos);
    const std::string data = html.substr(begin, end - begin);
    CHECK(data.rfind("iVBORw0KGgo", 0) == 0);
    CHECK(data.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
          std::string::npos);
    ++embedded;
  }
  CHECK(embedded == pngs.size());
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  return pngs;
}

/// The x of each `set arrow N from X, graph 0` of a staleness script, in order: the expected values.
std::vector<double> expected_lines(const std::string& script) {
  std::vector<double> xs;
  const std::regex arrow("set arrow \\d+ from ([-0-9.e]+), graph 0");
  for (auto it = std::sregex_iterator(script.begin(), script.end(), arrow); it != std::sregex_iterator();
       ++it)
    xs.push_back(std::stod((*it)[1]));
  return xs;
}

std::string chromium_skip_reason() {
  if (!fs::exists("/usr/bin/chromium")) return "chromium is not installed (apt-get install chromium)";
  if (!fs::exists("/usr/bin/gnuplot")) return "gnuplot is not installed";
  return "";
}

}  // namespace

TEST_CASE(
    "report: a ci_smoke run gives each plot its data allow, every PNG embedded, and says what is missing") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  petra::train_options train;
  train.config = "ci_smoke";
  train.sets = {"output.dir=" + out.path.string(), "output.name=x", "output.progress=false"};
  REQUIRE(petra::app::train_command(train) == 0);
  const fs::path run = out.path / "x";
  const auto before = entries(run);

  REQUIRE(report({run.string()}, "") == 0);
  const fs::path dir = run / "report";  // the default output
  const auto pngs = check_report_dir(dir);
  // Epoch lines give these; simulate measures no busy time and writes no step lines.
  CHECK(pngs == std::set<std::string>{"test_accuracy.png", "staleness.png", "throughput.png"});
  const std::string html = file_text(dir / "report.html");
  CHECK(html.find("no step lines: set output.metrics_every_steps") != std::string::npos);
  CHECK(html.find("runtime.mode lockstep or async") != std::string::npos);
  CHECK(html.find("method: petra") != std::string::npos);  // the config is shown
  // ci_smoke: J = 5, k = 1: the expected staleness 2(J−j)/k of stages 1..5.
  CHECK(expected_lines(file_text(dir / "staleness.gp")) == std::vector<double>{8, 6, 4, 2, 0});
  // Nothing else in the run directory changed; a second report replaces the first.
  auto after = entries(run);
  for (auto it = after.begin(); it != after.end();)
    it = it->rfind("report", 0) == 0 ? after.erase(it) : std::next(it);
  CHECK(after == before);
  REQUIRE(report({run.string()}, "") == 0);
  check_report_dir(dir);
}

TEST_CASE("report: two runs with step lines overlay their curves, one colour per run, in every plot") {
  scratch_dir out;
  fixture_run petra_run;
  fixture_run backprop_run;
  backprop_run.method = "backprop";
  backprop_run.steps_per_epoch = 60;  // many points: drawn as lines
  write_run(out.path / "petra", petra_run);
  write_run(out.path / "backprop", backprop_run);
  REQUIRE(report({(out.path / "petra").string(), (out.path / "backprop").string()},
                 (out.path / "cmp").string()) == 0);
  const fs::path dir = out.path / "cmp";
  const auto pngs = check_report_dir(dir);
  CHECK(pngs == std::set<std::string>{"training.png", "test_accuracy.png", "staleness.png", "inversion.png",
                                      "busy.png", "throughput.png"});
  for (const char* plot : {"training", "test_accuracy", "staleness", "busy", "throughput"}) {
    INFO(plot);
    const std::string script = file_text(dir / (std::string(plot) + ".gp"));
    CHECK(script.find("#1f77b4") != std::string::npos);  // the first run's colour
    CHECK(script.find("#d62728") != std::string::npos);  // the second's
  }
  // Backprop rebuilds nothing: the inversion plot is PETRA's alone, and the page says why.
  const std::string inversion = file_text(dir / "inversion.gp");
  CHECK(inversion.find("#1f77b4") != std::string::npos);
  CHECK(inversion.find("#d62728") == std::string::npos);
  const std::string html = file_text(dir / "report.html");
  CHECK(html.find("method backprop rebuilds no input") != std::string::npos);
  CHECK(html.find(">petra<") != std::string::npos);
  CHECK(html.find(">backprop<") != std::string::npos);
  // Expected staleness, J = 4, k = 2: PETRA 3, 2, 1, 0 per stage; backprop 0 everywhere.
  CHECK(expected_lines(file_text(dir / "staleness.gp")) == std::vector<double>{3, 0, 2, 0, 1, 0, 0, 0});
  CHECK(file_text(dir / "busy.gp").find("bottleneck") != std::string::npos);
}

TEST_CASE("report: a run with epoch lines but no step lines shows what is there and says what is missing") {
  scratch_dir out;
  fixture_run f;
  f.steps_per_epoch = 0;
  write_run(out.path / "run", f);
  REQUIRE(report({(out.path / "run").string()}, "") == 0);
  const fs::path dir = out.path / "run" / "report";
  const auto pngs = check_report_dir(dir);
  CHECK(pngs == std::set<std::string>{"test_accuracy.png", "staleness.png", "busy.png", "throughput.png"});
  const std::string html = file_text(dir / "report.html");
  CHECK(html.find("Training loss and accuracy</b>: no step lines: set output.metrics_every_steps") !=
        std::string::npos);
  CHECK(html.find("Inversion error per reversible stage</b>: no step lines") != std::string::npos);
}

TEST_CASE("report: headless Chromium opens report.html from disk and draws it (non-blank screenshot)") {
  if (auto why = chromium_skip_reason(); !why.empty()) PETRA_SKIP(why);
  scratch_dir out;
  write_run(out.path / "petra", fixture_run{});
  REQUIRE(report({(out.path / "petra").string()}, (out.path / "report").string()) == 0);
  const fs::path shot = out.path / "shot.png";
  const std::string command =
      "timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --user-data-dir='" +
      (out.path / "profile").string() + "' --screenshot='" + shot.string() +
      "' --window-size=1200,2000 'file://" + (out.path / "report" / "report.html").string() + "' > '" +
      (out.path / "chromium.log").string() + "' 2>&1";
  const int status = std::system(command.c_str());
  INFO("chromium log: " << file_text(out.path / "chromium.log"));
  REQUIRE(status == 0);
  const auto image = decode_png(shot.string());
  CHECK(image.width == 1200);
  CHECK(image.height == 2000);
  REQUIRE(image.channels >= 3);
  std::set<uint32_t> colours;
  size_t run_coloured = 0;  // pixels of the run's colour #1f77b4: the plots were drawn, not only text
  for (uint32_t y = 0; y < image.height; ++y)
    for (uint32_t x = 0; x < image.width; ++x) {
      const uint8_t* p = image.at(x, y);
      colours.insert(uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]);
      if (std::abs(p[0] - 0x1f) <= 12 && std::abs(p[1] - 0x77) <= 12 && std::abs(p[2] - 0xb4) <= 12)
        ++run_coloured;
    }
  CHECK(colours.size() > 1);  // not blank
  CHECK(run_coloured > 100);
}

TEST_CASE("report: a block moved by pipeline.rebalance is marked on the throughput plot at its time") {
  scratch_dir out;
  fixture_run f;
  write_run(out.path / "run", f);
  std::ofstream(out.path / "run" / "metrics.jsonl", std::ios::app)
      << R"({"event":"rebalance","position":32,"seconds":12.5,"block":3,"from":2,"to":3})"
      << "\n";
  REQUIRE(report({(out.path / "run").string()}, (out.path / "r").string()) == 0);
  const std::string script = file_text(out.path / "r" / "throughput.gp");
  CHECK(script.find("set arrow from 12.5, graph 0 to 12.5, graph 1") != std::string::npos);
  CHECK(script.find("set label \"2→3\" at 12.5") != std::string::npos);
  // A rebalance line without its numbers is bad input, named by file and line.
  std::ofstream(out.path / "run" / "metrics.jsonl", std::ios::app) << R"({"event":"rebalance","block":3})"
                                                                   << "\n";
  std::string errors;
  CHECK(report({(out.path / "run").string()}, (out.path / "r2").string(), &errors) == 2);
  CHECK(errors.find("a rebalance line needs numbers") != std::string::npos);
}

// `petra report`: a ci_smoke run and fixture runs with step lines give every plot their data allow
// (each a PNG that decodes, each embedded in report.html), several runs overlay, a run without step
// lines says what is missing, bad input exits 2 and writes nothing, and Chromium renders the page.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "app/commands.hpp"
#include "tests/app/png_reader.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using petra::app::report_command;
using petra::app::report_options;
using petra::test::decode_png;

namespace {

struct scratch_dir {
  fs::path path;
  scratch_dir() {
    path = fs::temp_directory_path() / ("petra-report-test-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch_dir() { fs::remove_all(path); }
};

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    names.insert(fs::relative(e.path(), dir).string());
  return names;
}

/// A run directory as `petra train` writes it, with made-up but consistent numbers: J stages,
/// accumulation k, `epochs` epoch lines, and `steps_per_epoch` step lines before each (none: 0).
struct fixture_run {
  std::string method = "petra";
  int stages = 4, k = 2, epochs = 2, steps_per_epoch = 20;
  bool busy = true;  // actor runtimes measure busy time; simulate reports 0
};

void write_run(const fs::path& dir, const fixture_run& f) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.yaml") << "training:\n  method: " << f.method << "\n  accumulation: " << f.k
                                     << "\nruntime:\n  mode: " << (f.busy ? "async" : "simulate") << "\n";
  std::ofstream metrics(dir / "metrics.jsonl");
  int step = 0;
  double seconds = 0;
  const bool reversible_method = f.method != "backprop";
  for (int epoch = 1; epoch <= f.epochs; ++epoch) {
    for (int s = 0; s < f.steps_per_epoch; ++s) {
      ++step;
      seconds += 0.5;
      json stages = json::array();
      for (int j = 1; j <= f.stages; ++j) {
        const bool reversible = reversible_method && j > 1 && j < f.stages;
        stages.push_back({{"stage", j},
                          {"staleness_mean", reversible_method ? 2.0 * (f.stages - j) / f.k : 0.0},
                          {"inversion_error_mean", reversible ? json(0.01 * j / step) : json(nullptr)}});
      }
      metrics << json{{"event", "step"},
                      {"epoch", epoch},
                      {"step", step},
                      {"micro_batches", step * f.k},
                      {"seconds", seconds},
                      {"loss", 2.3 / (1 + 0.1 * step)},
                      {"accuracy", 1 - 0.9 / (1 + 0.1 * step)},
                      {"lr", 0.05},
                      {"images_per_s", 1000 + step},
                      {"stages", stages},
                      {"a_key_from_the_future", 1}}
                     .dump()
              << "\n";
    }
    json stages = json::array();
    for (int j = 1; j <= f.stages; ++j) {
      const int expected = reversible_method ? 2 * (f.stages - j) / f.k : 0;
      json stage = {{"stage", j},
                    {"expected_delay_ticks", 2 * (f.stages - j)},
                    {"staleness_steps", {{std::to_string(expected), 30}, {std::to_string(expected + 1), 2}}},
                    {"busy_fraction", f.busy ? 0.2 + 0.1 * j : 0.0},
                    {"fifo_peak", 2 * (f.stages - j) + 1},
                    {"mailbox_peak", 2}};
      if (reversible_method && j > 1 && j < f.stages) stage["inversion_error_mean"] = 0.01 * j;
      stages.push_back(stage);
    }
    metrics << json{{"event", "epoch"},
                    {"epoch", epoch},
                    {"runtime", f.busy ? "async" : "simulate"},
                    {"train_loss", 1.0 / epoch},
                    {"train_accuracy", 0.5 + 0.1 * epoch},
                    {"test_loss", 1.1},
                    {"test_accuracy", 0.45 + 0.1 * epoch},
                    {"images_per_s", 1000.0},
                    {"epoch_seconds", 10.0},
                    {"stages", stages}}
                   .dump()
            << "\n"
            << json{{"event", "an_event_from_the_future"}}.dump() << "\n";
  }
  metrics << json{{"event", "summary"},
                  {"test_accuracy", 0.45 + 0.1 * f.epochs},
                  {"micro_batches", {{"completed", step * f.k}, {"replayed", 0}, {"restarts", 0}}},
                  {"wall_seconds", 25.0},
                  {"train_seconds", 20.0},
                  {"images_per_s", 1000.0}}
                 .dump()
          << "\n";
}

/// report_command with std::cerr captured.
int report(const std::vector<std::string>& runs, const std::string& output, std::string* errors = nullptr) {
  std::ostringstream captured;
  std::streambuf* saved = std::cerr.rdbuf(captured.rdbuf());
  report_options options;
  options.runs = runs;
  options.output = output;
  const int code = report_command(options);
  std::cerr.rdbuf(saved);
  if (errors != nullptr) *errors = captured.str();
  return code;
}

/// Every PNG of `dir` decodes to a non-empty image, is embedded in report.html (once) and nothing
/// in the page points outside it. Returns the PNGs' file names.
std::set<std::string> check_report_dir(const fs::path& dir) {
  const std::string html = read_text(dir / "report.html");
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

bool have_fashion_mnist() {
  return fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

std::string chromium_skip_reason() {
  if (!fs::exists("/usr/bin/chromium")) return "chromium is not installed (apt-get install chromium)";
  if (!fs::exists("/usr/bin/gnuplot")) return "gnuplot is not installed";
  return "";
}

}  // namespace

TEST_CASE(
    "report: a ci_smoke run gives each plot its data allow, every PNG embedded, and says what is missing") {
  if (!have_fashion_mnist())
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
  const std::string html = read_text(dir / "report.html");
  CHECK(html.find("no step lines: set output.metrics_every_steps") != std::string::npos);
  CHECK(html.find("runtime.mode lockstep or async") != std::string::npos);
  CHECK(html.find("method: petra") != std::string::npos);  // the config is shown
  // ci_smoke: J = 5, k = 1: the expected staleness 2(J−j)/k of stages 1..5.
  CHECK(expected_lines(read_text(dir / "staleness.gp")) == std::vector<double>{8, 6, 4, 2, 0});
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
    const std::string script = read_text(dir / (std::string(plot) + ".gp"));
    CHECK(script.find("#1f77b4") != std::string::npos);  // the first run's colour
    CHECK(script.find("#d62728") != std::string::npos);  // the second's
  }
  // Backprop rebuilds nothing: the inversion plot is PETRA's alone, and the page says why.
  const std::string inversion = read_text(dir / "inversion.gp");
  CHECK(inversion.find("#1f77b4") != std::string::npos);
  CHECK(inversion.find("#d62728") == std::string::npos);
  const std::string html = read_text(dir / "report.html");
  CHECK(html.find("method backprop rebuilds no input") != std::string::npos);
  CHECK(html.find(">petra<") != std::string::npos);
  CHECK(html.find(">backprop<") != std::string::npos);
  // Expected staleness, J = 4, k = 2: PETRA 3, 2, 1, 0 per stage; backprop 0 everywhere.
  CHECK(expected_lines(read_text(dir / "staleness.gp")) == std::vector<double>{3, 0, 2, 0, 1, 0, 0, 0});
  CHECK(read_text(dir / "busy.gp").find("bottleneck") != std::string::npos);
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
  const std::string html = read_text(dir / "report.html");
  CHECK(html.find("Training loss and accuracy</b>: no step lines: set output.metrics_every_steps") !=
        std::string::npos);
  CHECK(html.find("Inversion error per reversible stage</b>: no step lines") != std::string::npos);
}

TEST_CASE("report: bad input exits 2 with a message naming the file and line, and writes nothing") {
  scratch_dir out;
  write_run(out.path / "good", fixture_run{});
  auto bad_run = [&](const std::string& name, const std::string& metrics) {
    write_run(out.path / name, fixture_run{});
    if (metrics.empty())
      fs::remove(out.path / name / "metrics.jsonl");
    else
      std::ofstream(out.path / name / "metrics.jsonl") << metrics;
    return (out.path / name).string();
  };
  const std::string epoch = json{{"event", "epoch"}, {"epoch", 1}, {"test_accuracy", 0.5}}.dump();
  const std::string truncated = epoch + "\n" + epoch.substr(0, epoch.size() / 2);
  struct bad_case {
    std::vector<std::string> runs;
    std::string output;
    std::string message;  // what the error must say
  };
  const std::vector<bad_case> cases = {
      {{(out.path / "missing").string()}, "", "no such run directory"},
      {{bad_run("no-metrics", "")}, "", "metrics.jsonl: missing"},
      {{bad_run("truncated", truncated)}, "", "metrics.jsonl line 2: not valid JSON"},
      {{bad_run("wrong-type", epoch + "\n{\"event\":\"epoch\",\"epoch\":2,\"test_accuracy\":\"high\"}\n")},
       "",
       "metrics.jsonl line 2: \"test_accuracy\" must be a number"},
      {{bad_run("not-object", "[1, 2]\n")}, "", "metrics.jsonl line 1: expected a JSON object"},
      {{bad_run(
           "bad-histogram",
           "{\"event\":\"epoch\",\"epoch\":1,\"stages\":[{\"stage\":1,\"staleness_steps\":{\"x\":3}}]}\n")},
       "",
       "line 1, stage 1: \"staleness_steps\" has the key \"x\""},
      {{bad_run("no-epochs", json{{"event", "summary"}, {"test_accuracy", 0.5}}.dump() + "\n")},
       "",
       "no epoch lines"},
      // One bad run among good ones: nothing is written for any.
      {{(out.path / "good").string(), (out.path / "truncated").string()},
       (out.path / "both").string(),
       "line 2"},
      // An output that is a directory but not a report is never replaced.
      {{(out.path / "good").string()}, (out.path / "good").string(), "holds no report.html"},
  };
  for (const auto& c : cases) {
    INFO(c.runs.back() << " -> " << c.output);
    const auto before = entries(out.path);
    std::string errors;
    CHECK(report(c.runs, c.output, &errors) == 2);
    CHECK(errors.find(c.message) != std::string::npos);
    CHECK(errors.find("petra report: ") == 0);
    CHECK(entries(out.path) == before);  // no report, no temp directory, nothing
  }
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
  INFO("chromium log: " << read_text(out.path / "chromium.log"));
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
  const std::string script = read_text(out.path / "r" / "throughput.gp");
  CHECK(script.find("set arrow from 12.5, graph 0 to 12.5, graph 1") != std::string::npos);
  CHECK(script.find("set label \"2→3\" at 12.5") != std::string::npos);
  // A rebalance line without its numbers is bad input, named by file and line.
  std::ofstream(out.path / "run" / "metrics.jsonl", std::ios::app) << R"({"event":"rebalance","block":3})"
                                                                   << "\n";
  std::string errors;
  CHECK(report({(out.path / "run").string()}, (out.path / "r2").string(), &errors) == 2);
  CHECK(errors.find("a rebalance line needs numbers") != std::string::npos);
}

TEST_CASE("report: a failed run is not shown as finished, a resumed one's counts say what came before") {
  scratch_dir out;
  fixture_run f;
  f.steps_per_epoch = 0;
  for (const char* name : {"failed", "resumed"}) {  // each with a summary of its own instead
    write_run(out.path / name, f);
    std::string text = read_text(out.path / name / "metrics.jsonl");
    text.erase(text.rfind('\n', text.size() - 2) + 1);
    std::ofstream(out.path / name / "metrics.jsonl") << text;
  }
  // The failed run's process ended with a summary marked failed (no images/s: its work is undone).
  std::ofstream(out.path / "failed" / "metrics.jsonl", std::ios::app)
      << json{{"event", "summary"},
              {"status", "failed"},
              {"what", "stage 3 crashed; the run gives up"},
              {"test_accuracy", 0.65},
              {"wall_seconds", 9.0},
              {"train_seconds", 8.0},
              {"images_per_s", nullptr},
              {"micro_batches", {{"completed", 12}}}}
             .dump()
      << "\n";
  std::ofstream(out.path / "resumed" / "metrics.jsonl", std::ios::app)
      << json{{"event", "summary"},
              {"status", "finished"},
              {"test_accuracy", 0.65},
              {"wall_seconds", 9.0},
              {"train_seconds", 8.0},
              {"images_per_s", 900.0},
              {"micro_batches",
               {{"completed", 43}, {"replayed", 0}, {"restarts", 0}, {"completed_before_resume", 85}}}}
             .dump()
      << "\n";
  REQUIRE(report({(out.path / "failed").string(), (out.path / "resumed").string()},
                 (out.path / "r").string()) == 0);
  const std::string html = read_text(out.path / "r" / "report.html");
  CHECK(html.find("failed: the run failed (stage 3 crashed; the run gives up); its last epoch is shown") !=
        std::string::npos);
  CHECK(html.find("65.00 % (last epoch)") != std::string::npos);  // the failed run's, not as finished
  CHECK(html.find("43 (+85 before the resume) / 0 / 0") != std::string::npos);
}

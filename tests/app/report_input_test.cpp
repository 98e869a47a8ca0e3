// `petra report` reading runs: bad input (a missing run, a damaged metrics.jsonl, an output that is not
// a report) exits 2 naming the file and line and writes nothing; a failed run is not shown as
// finished, and a resumed run's counts say what came before the resume.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/app/report_fixture.hpp"
#include "tests/scratch_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace petra::testing;

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

TEST_CASE("report: a failed run is not shown as finished, a resumed one's counts say what came before") {
  scratch_dir out;
  fixture_run f;
  f.steps_per_epoch = 0;
  for (const char* name : {"failed", "resumed"}) {  // each with a summary of its own instead
    write_run(out.path / name, f);
    std::string text = file_text(out.path / name / "metrics.jsonl");
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
  const std::string html = file_text(out.path / "r" / "report.html");
  CHECK(html.find("failed: the run failed (stage 3 crashed; the run gives up); its last epoch is shown") !=
        std::string::npos);
  CHECK(html.find("65.00 % (last epoch)") != std::string::npos);  // the failed run's, not as finished
  CHECK(html.find("43 (+85 before the resume) / 0 / 0") != std::string::npos);
}

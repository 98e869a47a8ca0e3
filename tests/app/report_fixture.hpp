// `petra report`'s tests share these: run directories as `petra train` writes them, with made-up
// but consistent numbers, and report_command run with what it writes to stderr captured.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "tests/files.hpp"

namespace petra::testing {

inline std::set<std::string> entries(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    names.insert(std::filesystem::relative(e.path(), dir).string());
  return names;
}

/// A run directory as `petra train` writes it, with made-up but consistent numbers: J stages,
/// accumulation k, `epochs` epoch lines, and `steps_per_epoch` step lines before each (none: 0).
struct fixture_run {
  std::string method = "petra";
  int stages = 4, k = 2, epochs = 2, steps_per_epoch = 20;
  bool busy = true;  // actor runtimes measure busy time; simulate reports 0
};

inline void write_run(const std::filesystem::path& dir, const fixture_run& f) {
  std::filesystem::create_directories(dir);
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
      nlohmann::json stages = nlohmann::json::array();
      for (int j = 1; j <= f.stages; ++j) {
        const bool reversible = reversible_method && j > 1 && j < f.stages;
        stages.push_back({{"stage", j},
                          {"staleness_mean", reversible_method ? 2.0 * (f.stages - j) / f.k : 0.0},
                          {"inversion_error_mean",
                           reversible ? nlohmann::json(0.01 * j / step) : nlohmann::json(nullptr)}});
      }
      metrics << nlohmann::json{{"event", "step"},
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
    nlohmann::json stages = nlohmann::json::array();
    for (int j = 1; j <= f.stages; ++j) {
      const int expected = reversible_method ? 2 * (f.stages - j) / f.k : 0;
      nlohmann::json stage = {
          {"stage", j},
          {"expected_delay_ticks", 2 * (f.stages - j)},
          {"staleness_steps", {{std::to_string(expected), 30}, {std::to_string(expected + 1), 2}}},
          {"busy_fraction", f.busy ? 0.2 + 0.1 * j : 0.0},
          {"fifo_peak", 2 * (f.stages - j) + 1},
          {"mailbox_peak", 2}};
      if (reversible_method && j > 1 && j < f.stages) stage["inversion_error_mean"] = 0.01 * j;
      stages.push_back(stage);
    }
    metrics << nlohmann::json{{"event", "epoch"},
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
            << nlohmann::json{{"event", "an_event_from_the_future"}}.dump() << "\n";
  }
  metrics << nlohmann::json{{"event", "summary"},
                            {"test_accuracy", 0.45 + 0.1 * f.epochs},
                            {"micro_batches", {{"completed", step * f.k}, {"replayed", 0}, {"restarts", 0}}},
                            {"wall_seconds", 25.0},
                            {"train_seconds", 20.0},
                            {"images_per_s", 1000.0}}
                 .dump()
          << "\n";
}

/// report_command with std::cerr captured.
inline int report(const std::vector<std::string>& runs, const std::string& output,
                  std::string* errors = nullptr) {
  std::ostringstream captured;
  std::streambuf* saved = std::cerr.rdbuf(captured.rdbuf());
  app::report_options options;
  options.runs = runs;
  options.output = output;
  const int code = app::report_command(options);
  std::cerr.rdbuf(saved);
  if (errors != nullptr) *errors = captured.str();
  return code;
}

}  // namespace petra::testing

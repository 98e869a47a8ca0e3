// What the hang and busy-node tests share: the data set they need, waits on a run's output, and
// its metrics' summary.
#pragma once

#include <nlohmann/json.hpp>

#include "tests/files.hpp"
#include "tests/remote/child_process.hpp"
#include "tests/skip.hpp"

namespace petra::testing {

/// runtime.heartbeat_timeout of the hang and busy-node runs, in seconds.
constexpr double heartbeat_timeout_s = 2;

/// Waits (bounded) until the run's metrics.jsonl holds a step line: its stages are training.
inline void await_training(const temp_dir& runs, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  const auto metrics = runs.path() / name / "metrics.jsonl";
  while (file_text(metrics.string()).find("\"event\":\"step\"") == std::string::npos) {
    REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                    "no step line in " << metrics << " after 120 s");
    std::this_thread::sleep_for(20ms);
  }
}

/// Reads the run's stdout until a line holds `text` (bounded); the lines read go to `log`.
inline bool await_line(child_process& run, const std::string& text, std::string& log,
                       std::chrono::seconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto line = run.read_line(1000ms);
    if (!line) continue;
    log += *line + "\n";
    if (line->find(text) != std::string::npos) return true;
  }
  return false;
}

/// Waits (bounded) until the file at `path` holds `text`.
inline bool await_text(const std::string& path, const std::string& text, std::chrono::seconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (file_text(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

/// The lines of the run's metrics.jsonl whose event is `event`.
inline std::vector<nlohmann::json> metrics_events(const temp_dir& runs, const std::string& name,
                                                  const std::string& event) {
  std::ifstream metrics(runs.path() / name / "metrics.jsonl");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("event", "") == event) out.push_back(j);
  }
  return out;
}

}  // namespace petra::testing

// The test accuracy of a run's summary line, as `petra eval` prints it ("14.65"; empty when the run
// has no summary line).
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace petra::testing {

inline std::string summary_accuracy(const std::filesystem::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::string accuracy;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["event"] == "summary") {
      char text[32];
      std::snprintf(text, sizeof text, "%.2f", 100 * j["test_accuracy"].get<double>());
      accuracy = text;
    }
  }
  return accuracy;
}

}  // namespace petra::testing

// Reading a run's metrics.jsonl in tests, and what a resumed run's step lines must show.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace petra::testing {

/// The lines of a run's metrics.jsonl of one event kind ("epoch", "step", "failure"), in file order.
inline std::vector<nlohmann::json> event_lines(const std::filesystem::path& run, const std::string& event) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("event", "") == event) out.push_back(std::move(j));
  }
  return out;
}

/// The optimizer steps of a run's per-step lines, in file order.
inline std::vector<int64_t> step_numbers(const std::filesystem::path& run) {
  std::vector<int64_t> out;
  for (const nlohmann::json& j : event_lines(run, "step")) out.push_back(j["step"].get<int64_t>());
  return out;
}

/// Each step line once: the steps run again after a stop are not logged twice. They name the same
/// epoch and stream position as the uninterrupted run's, and their `seconds` count on from the
/// stopped run's (an order, not a duration: a resumed run does not start again at 0).
inline void check_step_lines(const std::filesystem::path& straight, const std::filesystem::path& resumed) {
  const auto steps = step_numbers(straight);
  CHECK(!steps.empty());
  CHECK(step_numbers(resumed) == steps);
  const auto a = event_lines(straight, "step"), b = event_lines(resumed, "step");
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(b[i]["epoch"] == a[i]["epoch"]);
    CHECK(b[i]["micro_batches"] == a[i]["micro_batches"]);
    if (i > 0) CHECK(b[i]["seconds"].get<double>() >= b[i - 1]["seconds"].get<double>());
  }
}

}  // namespace petra::testing

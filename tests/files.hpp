// A file's contents in tests: its text, or its JSON lines (a run's metrics.jsonl).
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace petra::testing {

/// The whole text of `file` ("" when it cannot be read).
inline std::string file_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Every line of `file` parsed as JSON, in file order.
inline std::vector<nlohmann::json> json_lines(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace petra::testing

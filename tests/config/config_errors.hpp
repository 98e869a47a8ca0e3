// Helpers of the config tests: the message a bad config gives, and substring checks.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace petra::config::testing {

/// The config_error message of parsing `yaml` (named runs/x.yaml) with `overrides`, or "(no error)".
inline std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, "runs/x.yaml", overrides);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace petra::config::testing

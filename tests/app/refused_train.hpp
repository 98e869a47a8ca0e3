// `petra train` refusing bad input: exit code 2, a message that says what was wrong, nothing written.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.hpp"

namespace petra::testing {

/// Trains `config` with `sets` and its output under `runs`, and checks the refusal: exit code 2,
/// `message` in what it wrote to stderr, and `runs` never made.
inline void check_train_refused(const std::string& config, const std::vector<std::string>& sets,
                                const std::string& message, const std::filesystem::path& runs) {
  train_options o;
  o.config = config;
  o.sets = sets;
  o.sets.push_back("output.dir=" + runs.string());
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const int code = app::train_command(o);
  std::cerr.rdbuf(old);
  CHECK(code == 2);
  CHECK_MESSAGE(captured.str().find(message) != std::string::npos, captured.str());
  CHECK_FALSE(std::filesystem::exists(runs));
}

}  // namespace petra::testing

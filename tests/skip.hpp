// A test case that cannot run here (no GPU, no data set, no program) says why and ends as
// "skipped" in ctest through the skip return code, never through text matched in its output.
#pragma once

#include <doctest/doctest.h>

#include <string>

namespace petra::testing {

/// The exit code of a test run whose every test case was skipped (ctest's SKIP_RETURN_CODE).
constexpr int skip_return_code = 77;

/// Marks the running test case skipped, with the reason printed once.
void mark_skipped(const std::string& why);

}  // namespace petra::testing

/// Ends the running test case as skipped; only at the top of a test case, before any check.
#define PETRA_SKIP(why)                  \
  do {                                   \
    ::petra::testing::mark_skipped(why); \
    return;                              \
  } while (0)

// A test case that cannot run here (no GPU, no data set, no program) says why and ends as
// "skipped" in ctest through the skip return code, never through text matched in its output.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

namespace petra::testing {

/// The exit code of a test run whose every test case was skipped (ctest's SKIP_RETURN_CODE).
constexpr int skip_return_code = 77;

/// Marks the running test case skipped, with the reason printed once.
void mark_skipped(const std::string& why);

/// Whether Debian's Fashion-MNIST (dataset-fashion-mnist) is installed.
inline bool have_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

}  // namespace petra::testing

/// Ends the running test case as skipped; only at the top of a test case, before any check.
#define PETRA_SKIP(why)                  \
  do {                                   \
    ::petra::testing::mark_skipped(why); \
    return;                              \
  } while (0)

/// Skips the running test case where Fashion-MNIST is missing.
#define PETRA_REQUIRE_FASHION_MNIST()                                                                     \
  do {                                                                                                    \
    if (!::petra::testing::have_fashion_mnist())                                                          \
      PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)"); \
  } while (0)

// What every fuzz target shares: libFuzzer's entry point, and a scratch directory for the readers
// that take a path (the input is written there as the file they are asked to read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

/// libFuzzer's entry point: runs one input through a reader. A reader may throw its documented
/// error (the target catches it); anything else escaping is a finding.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

namespace petra::fuzz {

/// Writes `size` bytes to `name` in this process's scratch directory (made on first use under
/// $TMPDIR, removed at exit) and returns the file's path.
std::string write_scratch_file(const std::string& name, const uint8_t* data, std::size_t size);

/// The scratch directory itself.
std::string scratch_dir();

}  // namespace petra::fuzz

// The corpus replay of the normal build: runs every file of a corpus folder through one fuzz
// target's entry point, so that each ctest run re-checks every seed and every past finding without
// clang. A documented reader error is caught inside the target; anything escaping here fails.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1]))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());  // a stable order makes a failure reproducible by name
  if (files.empty()) {
    std::fprintf(stderr, "%s: no corpus files\n", argv[1]);
    return 1;
  }
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    try {
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: uncaught %s\n", file.c_str(), e.what());
      return 1;
    }
  }
  std::printf("%zu corpus files replayed from %s\n", files.size(), argv[1]);
  return 0;
}

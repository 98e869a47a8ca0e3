// A fresh temporary folder for one test, removed with everything in it when the test ends.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <iterator>
#include <string>

namespace petra::testing {

struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    path = std::filesystem::temp_directory_path() / ("petra-test-" + std::to_string(::getpid()) + "-" +
                                                     std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  /// How many files and folders it holds (0: a refused run wrote nothing).
  std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(std::filesystem::directory_iterator(path), std::filesystem::directory_iterator{}));
  }
};

}  // namespace petra::testing

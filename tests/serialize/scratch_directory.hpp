// Test helpers for files: a fresh temp directory per test (removed with everything in it),
// whole-file reads and writes, and a cap on file size that makes writes fail like a full disk.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace petra::testing {

class scratch_directory {
 public:
  scratch_directory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "petra_serialize_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~scratch_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_directory(const scratch_directory&) = delete;
  scratch_directory& operator=(const scratch_directory&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

  /// Names of everything in the directory, sorted: the "no stray temp file" check.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& item : std::filesystem::directory_iterator(path_))
      names.push_back(item.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The message of the exception `action` throws, or "" when it throws none.
inline std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Caps the size of files this process may write, so that a write fails with EFBIG the
// way it would with ENOSPC on a full disk; restores the limit and SIGXFSZ afterwards.
class file_size_limit {
 public:
  explicit file_size_limit(rlim_t bytes) {
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &previous_);
    rlimit limited = previous_;
    limited.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limited);
  }
  ~file_size_limit() {
    ::setrlimit(RLIMIT_FSIZE, &previous_);
    std::signal(SIGXFSZ, previous_handler_);
  }

 private:
  rlimit previous_{};
  void (*previous_handler_)(int) = nullptr;
};

}  // namespace petra::testing

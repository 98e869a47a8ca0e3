// The fuzz targets' scratch directory: one per process, so parallel replays never share files.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tests/fuzz/fuzz_target.hpp"

namespace petra::fuzz {
namespace {

// Removes the directory when the process ends normally; a crashing input leaves it for inspection.
struct scratch_owner {
  std::filesystem::path path;
  scratch_owner() {
    std::string pattern = (std::filesystem::temp_directory_path() / "petra_fuzz_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path = pattern;
  }
  ~scratch_owner() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

const scratch_owner& owner() {
  static const scratch_owner dir;
  return dir;
}

}  // namespace

std::string scratch_dir() { return owner().path.string(); }

std::string write_scratch_file(const std::string& name, const uint8_t* data, std::size_t size) {
  const std::string path = (owner().path / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write the fuzz input to " + path);
  return path;
}

}  // namespace petra::fuzz

// load_config finds files and presets, names the file in messages, and never writes anything.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using petra::config::testing::contains;
namespace fs = std::filesystem;

namespace {

/// A fresh empty directory, removed at scope exit.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "petra_config_test_XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~temp_dir() { fs::remove_all(path); }
  size_t entries() const { return std::distance(fs::directory_iterator(path), fs::directory_iterator()); }
};

/// Runs with the working directory set to `dir`, restored at scope exit.
struct working_dir {
  fs::path previous = fs::current_path();
  explicit working_dir(const fs::path& dir) { fs::current_path(dir); }
  ~working_dir() { fs::current_path(previous); }
};

void write_file(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string load_error_of(const std::string& path_or_preset, const std::vector<std::string>& overrides = {}) {
  try {
    load_config(path_or_preset, overrides);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a file path loads, and its messages name the path and line") {
  temp_dir dir;
  const fs::path file = dir.path / "x.yaml";
  write_file(file, "model:\n  arch: tiny\ntraining:\n  epochs: 2\n  method: petraa\n");
  const std::string message = load_error_of(file.string());
  CHECK(contains(message, "training.method at " + file.string() + ":5"));

  write_file(file, "training:\n  epochs: 2\n");
  CHECK(load_config(file.string()).training.epochs == 2);
  CHECK(load_config(file.string(), {"training.epochs=9"}).training.epochs == 9);
}

TEST_CASE("a missing file names itself, the presets directory and the presets there") {
  const std::string message = load_error_of("no_such_config.yaml");
  CHECK(contains(message, "config file 'no_such_config.yaml' not found"));
  CHECK(contains(message, "no preset of that name in " + presets_dir()));
  CHECK(contains(message, "available presets: "));
  CHECK(contains(message, "default"));
  CHECK(contains(message, "revnet18_cifar10"));
  CHECK(contains(load_error_of("dir/missing.yaml"), "config file 'dir/missing.yaml' not found"));
  CHECK(contains(load_error_of(presets_dir()), "is a directory"));
}

TEST_CASE("a preset name resolves with or without .yaml, and an existing file wins over a preset") {
  CHECK(load_config("default.yaml").model.arch == model_arch::fashion_small);
  temp_dir dir;
  working_dir inside(dir.path);
  write_file("default", "training:\n  epochs: 11\n");  // a local file named like a preset
  CHECK(load_config("default").training.epochs == 11);
}

TEST_CASE("loading never writes files, good or bad") {
  temp_dir dir;
  const fs::path config_dir = dir.path / "configs";
  fs::create_directory(config_dir);
  write_file(config_dir / "bad.yaml", "training:\n  epochs: -1\noutput:\n  dir: out\n  name: run\n");
  write_file(config_dir / "good.yaml", "training:\n  epochs: 1\noutput:\n  dir: out\n  name: run\n");

  temp_dir cwd;
  working_dir inside(cwd.path);
  CHECK_THROWS_AS(load_config((config_dir / "bad.yaml").string()), config_error);
  CHECK_THROWS_AS(load_config((config_dir / "good.yaml").string(), {"training.epcohs=3"}), config_error);
  CHECK_THROWS_AS(load_config("no_such_preset"), config_error);
  CHECK_NOTHROW(load_config((config_dir / "good.yaml").string()));
  CHECK_NOTHROW(load_config("default"));
  CHECK(cwd.entries() == 0);
  CHECK(std::distance(fs::directory_iterator(config_dir), fs::directory_iterator()) == 2);
}

// Run directories of `petra train` runs made by a test (the tiny model on 4 stages, a snapshot
// every 4 optimizer steps), under one temporary root removed before and after: the settings of a
// run, its checkpoint's weights and its metrics lines.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/actors/runtime_fixture.hpp"

namespace petra::testing {

/// The one delay (in ticks) a stage's metrics record, as a number.
inline int64_t only_delay(const nlohmann::json& stage) {
  REQUIRE(stage["delay_ticks"].size() == 1);
  return std::stoll(stage["delay_ticks"].begin().key());
}

struct run_dirs {
  std::filesystem::path root;
  std::string train_limit;
  /// `prefix` names the root (with the process id); `train_limit` images per epoch.
  explicit run_dirs(const std::string& prefix = "petra-faults-", std::string images = "256")
      : root(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))),
        train_limit(std::move(images)) {
    std::filesystem::remove_all(root);
  }
  ~run_dirs() { std::filesystem::remove_all(root); }
  run_dirs(const run_dirs&) = delete;
  run_dirs& operator=(const run_dirs&) = delete;

  std::vector<std::string> sets(const std::string& mode, const std::string& name,
                                std::vector<std::string> more) const {
    std::vector<std::string> s = {"runtime.mode=" + mode,
                                  "data.train_limit=" + train_limit,
                                  "data.test_limit=64",
                                  "pipeline.stage_blocks=[1,2,1,1]",
                                  "output.checkpoint_every_steps=4",
                                  "output.dir=" + root.string(),
                                  "output.name=" + name,
                                  "output.progress=false"};
    s.insert(s.end(), more.begin(), more.end());
    return s;
  }
  std::vector<std::string> sets(const std::string& name, std::vector<std::string> more) const {
    return sets("lockstep", name, std::move(more));
  }
  trained weights(const std::string& name) const {
    trained t;
    t.weights = load_safetensors((root / name / "checkpoint.safetensors").string()).tensors;
    return t;
  }
  std::vector<nlohmann::json> events(const std::string& name, const std::string& kind) const {
    std::ifstream in(root / name / "metrics.jsonl");
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (j["event"] == kind) out.push_back(std::move(j));
    }
    return out;
  }
  nlohmann::json first_event(const std::string& name, const std::string& kind) const {
    const auto all = events(name, kind);
    REQUIRE_MESSAGE(!all.empty(), "no " << kind << " line in " << name << "/metrics.jsonl");
    return all.front();
  }
  nlohmann::json summary(const std::string& name) const { return first_event(name, "summary"); }
};

}  // namespace petra::testing

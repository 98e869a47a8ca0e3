// Runs of the tiny preset with snapshots, and what their metrics must show: shared by the snapshot
// and the async recovery tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tests/actors/metrics_lines.hpp"
#include "tests/actors/runtime_fixture.hpp"

namespace petra::testing {

/// Two epochs of 32 micro-batches of 8 on 4 stages, a snapshot every 5 steps, a step line every 2;
/// `method` as in set_method ("petra", "delayed+inputs+weights", ...).
inline std::vector<std::string> base_sets(const std::filesystem::path& dir, const std::string& mode,
                                          const std::string& method) {
  std::vector<std::string> sets = {"runtime.mode=" + mode,
                                   "training.epochs=2",
                                   "data.train_limit=256",
                                   "data.test_limit=64",
                                   "output.dir=" + dir.string(),
                                   "output.checkpoint_every_steps=5",
                                   "pipeline.stage_blocks=[1,2,1,1]",
                                   "output.metrics_every_steps=2"};
  const auto plus = method.find('+');
  sets.push_back("training.method=" + method.substr(0, plus));
  if (method.find("+inputs") != std::string::npos) sets.push_back("training.stash_inputs=true");
  if (method.find("+weights") != std::string::npos) sets.push_back("training.stash_weights=true");
  return sets;
}

/// The epoch lines without what depends on the clock.
inline std::vector<nlohmann::json> epoch_lines(const std::filesystem::path& run) {
  std::vector<nlohmann::json> out;
  for (nlohmann::json& j : event_lines(run, "epoch"))
    out.push_back({j["epoch"], j["train_loss"], j["train_accuracy"], j["test_loss"], j["test_accuracy"]});
  return out;
}

/// Every stage ran each of the 32 micro-batches of both epochs forward and backward once. (A
/// stage's epoch record ends with the epoch's last backward: in async, forwards of the next
/// epoch run before it, so only the two epochs' forwards add up to 64.)
inline void check_every_micro_batch_once(const std::filesystem::path& run) {
  const auto epochs = event_lines(run, "epoch");
  REQUIRE(epochs.size() == 2);
  REQUIRE(epochs[0]["stages"].size() == 4);
  REQUIRE(epochs[1]["stages"].size() == 4);
  for (std::size_t j = 0; j < 4; ++j) {
    const nlohmann::json &first = epochs[0]["stages"][j], &second = epochs[1]["stages"][j];
    CHECK(first["forwards"].get<int64_t>() + second["forwards"].get<int64_t>() == 64);
    CHECK(first["backwards"] == 32);
    CHECK(second["backwards"] == 32);
  }
}

inline trained final_weights(const std::filesystem::path& run) {
  trained t;
  t.weights = load_safetensors((run / "checkpoint.safetensors").string()).tensors;
  return t;
}

}  // namespace petra::testing

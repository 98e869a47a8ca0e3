// Runs of the tiny preset with snapshots, and what their metrics must show: shared by the snapshot
// and the async recovery tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "tests/actors/metrics_lines.hpp"
#include "tests/actors/runtime_fixture.hpp"
#include "training/snapshot.hpp"

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

/// Runs `method` in `mode` (base_sets plus `extra`) straight, and again stopped right after its
/// `stop_after`-th snapshot and resumed: both must end bit-identical, with the same epoch and step
/// lines. `also` looks at both runs (dir/straight, dir/stopped) before they are removed.
inline void stop_and_resume(const std::string& mode, const std::string& method, int stop_after,
                            const std::vector<std::string>& extra = {},
                            const std::function<void(const std::filesystem::path&)>& also = {}) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("petra-snapshot-" + std::to_string(::getpid()) + "-" + std::to_string(stop_after));
  fs::remove_all(dir);
  auto sets = base_sets(dir, mode, method);
  sets.insert(sets.end(), extra.begin(), extra.end());
  petra::train_options straight{"tiny", sets, "", 0};
  straight.sets.push_back("output.name=straight");
  REQUIRE(app::train_command(straight) == 0);

  petra::train_options first{"tiny", sets, "", 0};
  first.sets.push_back("output.name=stopped");
  first.stop_after_snapshots = stop_after;
  REQUIRE(app::train_command(first) == 0);
  REQUIRE(fs::exists(snapshot_manifest((dir / "stopped").string())));
  // A process killed a little after the snapshot would have logged a step line past it: add the
  // uninterrupted run's next one (a millisecond after the stopped run's last), which the resumed
  // run must not log again.
  {
    const auto logged = event_lines(dir / "stopped", "step");
    const int64_t done = logged.empty() ? 0 : logged.back()["step"].get<int64_t>();
    for (nlohmann::json j : event_lines(dir / "straight", "step"))
      if (j["step"].get<int64_t>() > done) {
        j["seconds"] = (logged.empty() ? 0.0 : logged.back()["seconds"].get<double>()) + 1e-3;
        std::ofstream(dir / "stopped" / "metrics.jsonl", std::ios::app) << j.dump() << "\n";
        break;
      }
  }
  petra::train_options resume{"", {}, (dir / "stopped").string(), 0};
  REQUIRE(app::train_command(resume) == 0);

  CHECK(differing(final_weights(dir / "straight"), final_weights(dir / "stopped")) == 0);
  const auto a = epoch_lines(dir / "straight"), b = epoch_lines(dir / "stopped");
  CHECK(a.size() == 2);
  CHECK(a == b);
  check_step_lines(dir / "straight", dir / "stopped");
  if (also) also(dir);
  fs::remove_all(dir);
}

}  // namespace petra::testing

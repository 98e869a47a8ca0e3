// Runs of the tiny preset with stages moved at drained points, and what their metrics must show:
// shared by the migration tests of lockstep, async and forward gradients.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "tests/actors/snapshot_runs.hpp"

namespace petra::testing {

/// The tiny preset on 4 stages [1, 2, 1, 1] in `mode`, three epochs of 32 micro-batches that drain
/// at their ends (the points where pipeline.migrate entries at 32 and 64 move stages).
inline std::vector<std::string> migration_sets(const std::filesystem::path& dir, const std::string& name,
                                               const std::string& mode = "lockstep") {
  return {"runtime.mode=" + mode,
          "training.epochs=3",
          "data.train_limit=256",
          "data.test_limit=64",
          "output.dir=" + dir.string(),
          "output.name=" + name,
          "training.drain_at_epoch_end=true",
          "pipeline.stage_blocks=[1,2,1,1]"};
}

/// A fresh directory for the runs of one test.
inline std::filesystem::path migration_scratch(const std::string& what) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("petra-migrate-" + what + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

/// `petra train tiny` with `sets` and `extra`: its exit code.
inline int train_migrating(std::vector<std::string> sets, const std::vector<std::string>& extra) {
  sets.insert(sets.end(), extra.begin(), extra.end());
  petra::train_options o{"tiny", sets, "", 0};
  return app::train_command(o);
}

/// Every stage ran each micro-batch of the three epochs backward once, across the moves.
inline void check_every_backward_once(const std::filesystem::path& run) {
  const auto epochs = event_lines(run, "epoch");
  REQUIRE(epochs.size() == 3);
  for (const auto& e : epochs) {
    REQUIRE(e["stages"].size() == 4);
    for (const auto& s : e["stages"]) CHECK(s["backwards"] == 32);
  }
}

/// The scheduled moves of a run, in order: (position, stage, from, to) of each migrate line.
using expected_moves = std::vector<std::tuple<int, int, std::string, std::string>>;
inline void check_scheduled_moves(const std::vector<nlohmann::json>& lines, const expected_moves& expected) {
  REQUIRE(lines.size() == expected.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CAPTURE(i);
    const auto& [position, stage, from, to] = expected[i];
    CHECK(lines[i]["position"] == position);
    CHECK(lines[i]["stage"] == stage);
    CHECK(lines[i]["from"] == from);
    CHECK(lines[i]["to"] == to);
    CHECK(lines[i]["scheduled"] == true);
  }
}

/// Each migrate line's checksums: the state the new actor held right after the move is the state
/// the old one gave, byte for byte.
inline void check_state_carried(const std::vector<nlohmann::json>& lines) {
  for (const auto& l : lines) {
    CAPTURE(l.dump());
    REQUIRE(l["checksum"].is_string());
    CHECK(l["checksum"].get<std::string>().size() == 16);
    CHECK(l["restored_checksum"] == l["checksum"]);
    CHECK(l["bytes"].get<int64_t>() > 0);
  }
}

}  // namespace petra::testing

// A run directory: the resolved config, metrics as JSON Lines, checkpoints.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace petra {

/// The run directory cannot be made where output.dir and output.name put it (a file on the way, a
/// folder nobody may write): bad input, and nothing is left behind.
struct run_dir_refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class run_dir {
 public:
  /// Creates the directory at `path`; refuses an existing non-empty one (nothing is overwritten).
  /// Throws run_dir_refused where it cannot be made (what it made on the way is removed).
  static run_dir create(const std::string& path);

  /// An existing run directory, to continue (metrics are appended; temp files of an interrupted
  /// write are removed).
  static run_dir reopen(const std::string& path);

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// The highest epoch of the epoch lines metrics.jsonl holds (0 for none; a line a killed process
  /// left half-written is skipped): a resumed run that logs one of them again removes the earlier
  /// one (forget_epochs_from).
  int last_logged_epoch() const;
  /// The same for the per-step lines: the highest optimizer step logged and that line's
  /// `seconds` (0 and 0 for none); a resumed run's step lines count on from it.
  struct logged_step {
    int64_t step = 0;
    double seconds = 0;
  };
  logged_step last_logged_step() const;
  /// Appends one JSON object as a line of metrics.jsonl, flushed at once.
  void log(const nlohmann::json& record);
  /// Removes the epoch lines of epoch `epoch` and later from metrics.jsonl (rewritten atomically;
  /// every other line stays, but one a killed process left half-written): they came from an attempt
  /// that was undone (a rollback, or a process stopped after its last restore point), and the
  /// epochs' lines of the attempt kept replace them.
  void forget_epochs_from(int epoch);

 private:
  run_dir() = default;
  std::string path_;
  std::ofstream metrics_;
};

/// "<stem>-<method>-YYYYmmdd-HHMMSS" in UTC.
std::string default_run_name(const std::string& stem, const std::string& method);

/// The `event` lines of the metrics.jsonl at `path`, in order (none if it is missing; lines a
/// killed process left half-written are skipped).
std::vector<nlohmann::json> logged_events(const std::string& path, const std::string& event);

}  // namespace petra

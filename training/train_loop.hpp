// The trainer loop every runtime shares: epochs cut into phases that end drained, evaluation,
// checkpoints, resume, and the recovery policy (roll back to the last checkpoint, replay).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/optimizer.hpp"
#include "config/config.hpp"
#include "training/runtime.hpp"
#include "training/training_data.hpp"

namespace petra {

struct train_options {
  std::string config;             // file or preset name
  std::vector<std::string> sets;  // "key=value" overrides
  std::string resume;             // a run directory to continue instead
  int stop_after_epoch = 0;       // stop (resumably) after this epoch; 0 = run to the end
  int stop_after_snapshots = 0;   // stop as if killed right after writing this many snapshots (tests)
  /// Told the run directory once it exists (and before anything is trained): `petra train` keeps
  /// it for the message a Ctrl-C prints.
  std::function<void(const std::string& run_dir)> on_run_dir{};
  /// Told once the run is complete (its summary line written): what follows is only the process's
  /// shutdown, and a signal from here on loses nothing.
  std::function<void()> on_complete{};
  bool trace_flag = false;  // --trace was given (a refusal of output.trace names the flag)
};

/// Builds the runtime runtime.mode names (the caller knows every runtime; training/ knows none).
/// Throws config::config_error or std::invalid_argument for a config it cannot honour.
using runtime_factory = std::function<std::unique_ptr<pipeline_runtime>(
    const config::run_config&, training_data&, const optimizer_settings&)>;

/// `petra train`. Returns the exit code: 0 done, 1 failed while running, 2 bad input (reported
/// before anything is written).
int run_training(const train_options& options, const runtime_factory& make_runtime);

}  // namespace petra

// Everything a run needs before it writes anything: the config, the data, the runtime, where to
// start; every input checked (bad input is reported before a file exists).
#pragma once

#include <memory>
#include <string>

#include "training/cut.hpp"
#include "training/method.hpp"
#include "training/trace_window.hpp"
#include "training/train_loop.hpp"

namespace petra {

/// Everything the run needs, checked.
struct prepared_run {
  config::run_config cfg;
  training_data data;
  optimizer_settings opt;
  method_options method;
  std::unique_ptr<pipeline_runtime> runtime;
  std::string run_path;   // the run directory (to create, or to reopen when resuming)
  int epoch = 1;          // the epoch to start or continue
  int64_t position = 0;   // its next micro-batch
  int64_t per_epoch = 0;  // micro-batches per epoch
  // Resuming from a snapshot (newer than the checkpoint): the phase it was taken in starts at
  // (epoch, position) and holds resume_count micro-batches; it continues from the cut, taken before
  // micro-batch resume_position of the run.
  std::shared_ptr<const pipeline_cut> resume_cut;
  int64_t resume_count = 0;
  int64_t resume_position = 0;
  trace_window trace;  // output.trace: the micro-batches of the run its timeline records
  // Resuming: the run's config.yaml with the --set overrides (what `petra train <run>/config.yaml`
  // repeats from now on), the keys they changed, and the micro-batches of the run that earlier
  // processes completed (the checkpoint's position, or stage 1's count at the snapshot's cut).
  config::run_config resumed_config;
  std::vector<config::key_change> resume_changes;
  int64_t completed_before = 0;
};

class run_dir;

/// Trains a prepared run into its directory (the trainer loop): 0 when done or stopped as asked;
/// a run that fails throws after writing its failure and summary lines.
int train_prepared(prepared_run& p, const train_options& options, run_dir& dir);

/// Loads and checks the config (or the run directory to resume), the data and the runtime; throws
/// (config::config_error, data errors, std::invalid_argument) on bad input.
prepared_run prepare(const train_options& options, const runtime_factory& make_runtime);

}  // namespace petra

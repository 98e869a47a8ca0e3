// What `petra train` drives, whatever runs it: the reference simulator or the actor runtime.
#pragma once

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/training_data.hpp"

namespace petra {

/// One training phase's totals (run_totals: micro-batches, samples, correct, loss, ticks) and the
/// per-stage measurements, as measured by whoever ran it.
struct phase_totals : run_totals {
  nlohmann::json stages = nlohmann::json::array();
};

/// Called as micro-batches complete: (done in this phase, totals so far).
using progress_fn = std::function<void(const phase_totals&)>;

class trainer {
 public:
  virtual ~trainer() = default;
  /// Trains micro-batches [first, first + count) of `epoch` (1-based) and drains the pipeline.
  /// `attempt` > 0 replays the phase after a rollback (injected faults stay off).
  virtual phase_totals train(int epoch, int64_t first, int64_t count, const progress_fn& progress,
                             int attempt = 0) = 0;
  /// After a failure: tears the pipeline down and builds it again (stages of a lost node move to a
  /// spare node, or back to theirs if it answers). The caller then restores the last checkpoint.
  virtual void recover() = 0;
  /// Mean loss and accuracy on the test feed, with running BN statistics.
  virtual eval_result evaluate(data_feed& test) = 0;
  /// Every stage's state and step counts in one safetensors file (written atomically).
  virtual void save_checkpoint(const std::string& path, std::map<std::string, std::string> metadata) = 0;
  /// Restores every stage; returns the file's metadata.
  virtual std::map<std::string, std::string> load_checkpoint(const std::string& path) = 0;
  /// Optimizer steps of the first stage (for the lr shown in metrics).
  virtual double current_lr() = 0;
};

}  // namespace petra

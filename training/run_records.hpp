// A run's epoch lines and the summary of its process, with the clocks and counts behind their
// figures: each epoch's time and the images trained in it (only those: a process resumed, or an
// attempt replayed, inside an epoch measures from there), the process's training time and images.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "training/accounting.hpp"
#include "training/prepared_run.hpp"
#include "training/progress.hpp"
#include "training/run_dir.hpp"

namespace petra {

class run_records {
 public:
  using clock_type = std::chrono::steady_clock;

  /// For `p`'s process writing into `dir`; `resumed` when it continues an earlier one's run.
  run_records(prepared_run& p, run_dir& dir, progress& bar, bool resumed);

  /// The process starts training now.
  void start();
  /// A phase starts, and ends having trained `samples` images in this process.
  void phase_started();
  void phase_ended(int64_t samples);
  /// `seconds` of evaluation on a drained pipeline: not training time.
  void evaluated(double seconds) { eval_seconds_ += seconds; }
  /// Stage 1 starts its epoch clock again (a replay after a rollback, a rebuilt stage 1) where it
  /// had completed `completed` micro-batches of the run.
  void stage1_restarted(int64_t completed) { stage1_from_ = completed; }

  /// The epoch line of metrics.jsonl and the terminal's. An epoch an undone attempt (before a
  /// rollback, or a process stopped after its last restore point) logged already loses that line.
  void log_epoch(const epoch_result& e);
  /// The summary line and the terminal's `done:` of a process that finished; `account` its counts.
  void summarize(const accounting& account);
  /// The summary of a process that ends failed (`what`). No images/s: its last phase's work after
  /// its restore point is undone, a resume trains it again.
  void summarize_failure(const accounting& account, const std::string& what);

 private:
  bool waves() const { return !p_.cfg.training.drain_at_epoch_end; }

  prepared_run& p_;
  run_dir& dir_;
  progress& bar_;
  bool resumed_;
  std::size_t J_;
  int logged_in_file_ = 0;  // the highest epoch metrics.jsonl has a line of (an earlier process's, too)
  // Where the clocks of the epoch lines started, as micro-batches of the run stage 1 had completed:
  // the trainer's (drained epochs) at this process's start, stage 1's (evaluation waves) there or at
  // its last restart.
  int64_t process_from_ = 0;
  int64_t stage1_from_ = 0;
  clock_type::time_point run_start_;
  clock_type::time_point phase_clock_;        // since the running phase began (none between phases)
  clock_type::time_point epoch_clock_;        // since the previous epoch line
  double eval_seconds_ = 0;                   // drained evaluations since then (not training time)
  double waited_before_ = 0;                  // the loader's waited time at the previous epoch line
  double train_seconds_ = 0;                  // of the phases this process finished
  int64_t train_images_ = 0;                  // the images it trained in them
  std::optional<double> last_test_accuracy_;  // of the last epoch line this process wrote
};

}  // namespace petra

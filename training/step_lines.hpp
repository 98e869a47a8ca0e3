// The per-step lines of metrics.jsonl (output.metrics_every_steps): loss, accuracy, learning rate
// and images/s over the last N optimizer steps of stage 1, and each stage's latest window.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "compute/optimizer.hpp"
#include "training/json_record.hpp"
#include "training/run_dir.hpp"
#include "training/simulator.hpp"
#include "training/stage_window.hpp"

namespace petra {

/// One stage of a step line; null where it has no value (not reversible, no sample in the window).
struct step_stage_record {
  int stage = 0;  // 1-based
  std::optional<double> staleness_mean, inversion_error_mean;
};

/// A `{"event":"step"}` line of metrics.jsonl: means over the micro-batches since the previous one.
/// Optional where a reader may find a field absent (petra writes them all).
struct step_record {
  int epoch = 0;
  int64_t step = 0;                      // optimizer steps of stage 1 so far
  std::optional<int64_t> micro_batches;  // the stream's position
  std::optional<double> seconds, loss, accuracy, lr, images_per_s;
  std::vector<step_stage_record> stages;
};

template <class Fields>
void describe(Fields& f, step_stage_record& s) {
  using json_record::presence;
  f("stage", s.stage);
  f("staleness_mean", s.staleness_mean, presence::optional);
  f("inversion_error_mean", s.inversion_error_mean, presence::optional);
}

template <class Fields>
void describe(Fields& f, step_record& r) {
  using json_record::presence;
  f.tag("event", "step");
  f("epoch", r.epoch, presence::optional);
  f("step", r.step);
  f("micro_batches", r.micro_batches, presence::optional);
  f("seconds", r.seconds, presence::optional);
  f("loss", r.loss, presence::optional);
  f("accuracy", r.accuracy, presence::optional);
  f("lr", r.lr, presence::optional);
  f("images_per_s", r.images_per_s, presence::optional);
  f("stages", r.stages, presence::optional);
}

class step_lines {
 public:
  /// One line every `every` optimizer steps of stage 1 (0 = never), into `dir`. A resumed run
  /// (`resumed`) passes the last step line `dir` has (its step and seconds): the steps it runs again
  /// are not logged twice, its first line's window starts where it resumed (the totals it is shown
  /// then carry what earlier processes trained: not in its images/s), and its seconds count on from
  /// the earlier process's.
  step_lines(int every, const optimizer_settings& optimizer, run_dir& dir, run_dir::logged_step logged = {},
             bool resumed = false);

  /// Where the run stands: the stream's `position` (micro-batches of the run that reached the
  /// loss, counted from epoch 1's first) in `epoch`, the totals since this process started and
  /// each stage's latest window; `window_end` is how many micro-batches run_so_far counted when the
  /// last of stage 1's window was scored (the loss runs ahead of stage 1's backward: the totals seen
  /// now may hold later micro-batches, which belong to the next line). Writes a line when stage 1's
  /// window reached the next multiple of `every` steps, with the losses up to its end.
  void observe(int epoch, int64_t position, const run_totals& run_so_far,
               const std::vector<stage_window>& stages, int64_t window_end);

  /// The step lines' clock now: seconds since the run started, counted on across a resume.
  double seconds() const;

 private:
  int every_;
  optimizer_settings optimizer_;
  run_dir& dir_;
  int64_t next_ = 0;
  run_totals last_;
  std::vector<run_totals> seen_;  // the totals observed since the last line, in order
  bool rebase_ = false;           // resumed: the first observation is the window's start
  double seconds_before_ = 0;
  std::chrono::steady_clock::time_point start_, last_time_;
};

}  // namespace petra

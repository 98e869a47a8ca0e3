// Per-step metric lines.
#include "training/step_lines.hpp"

#include <algorithm>

namespace petra {

step_lines::step_lines(int every, const optimizer_settings& optimizer, run_dir& dir,
                       run_dir::logged_step logged, bool resumed)
    : every_(every),
      optimizer_(optimizer),
      dir_(dir),
      next_(every > 0 ? (logged.step / every + 1) * every : 0),
      rebase_(resumed || logged.step > 0),
      seconds_before_(logged.seconds),
      start_(std::chrono::steady_clock::now()),
      last_time_(start_) {}

double step_lines::seconds() const {
  return seconds_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void step_lines::observe(int epoch, int64_t position, const run_totals& run_so_far,
                         const std::vector<stage_window>& stages, int64_t window_end) {
  if (rebase_) {
    rebase_ = false;
    last_ = run_so_far;
    seen_.clear();
    last_time_ = std::chrono::steady_clock::now();
  }
  if (every_ <= 0) return;  // no step lines: nothing to keep
  if (seen_.empty() || run_so_far.micro_batches > seen_.back().micro_batches) seen_.push_back(run_so_far);
  if (stages.empty() || stages.front().optimizer_steps < next_) return;
  // The window's losses: the latest totals seen that end at or before its last micro-batch.
  const run_totals* end = nullptr;
  for (const run_totals& t : seen_)
    if (t.micro_batches <= window_end && t.micro_batches > last_.micro_batches) end = &t;
  if (!end) return;  // no loss of the window yet: wait for it
  const run_totals window_totals = *end;
  const int64_t steps = stages.front().optimizer_steps;
  next_ = (steps / every_ + 1) * every_;
  const auto now = std::chrono::steady_clock::now();
  const double window_seconds = std::chrono::duration<double>(now - last_time_).count();
  const run_totals window = window_totals.since(last_);
  step_record line;
  line.epoch = epoch;
  line.step = steps;
  line.micro_batches = position;
  line.seconds = seconds_before_ + std::chrono::duration<double>(now - start_).count();
  line.loss = window.mean_loss();
  line.accuracy = window.accuracy();
  line.lr = learning_rate(optimizer_, steps);
  line.images_per_s = window_seconds > 0 ? window.samples / window_seconds : 0.0;
  for (const stage_window& w : stages)
    line.stages.push_back(
        {w.stage + 1, w.staleness_mean,
         w.inversion_error_mean < 0 ? std::nullopt : std::optional(w.inversion_error_mean)});
  dir_.log(json_record::write(line));
  last_ = window_totals;
  seen_.erase(seen_.begin(), std::find_if(seen_.begin(), seen_.end(), [&](const run_totals& t) {
                return t.micro_batches > window_totals.micro_batches;
              }));
  last_time_ = now;
}

}  // namespace petra

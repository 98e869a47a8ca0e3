// Per-step metric lines.
#include "training/step_lines.hpp"

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
                         const std::vector<stage_window>& stages) {
  if (rebase_) {
    rebase_ = false;
    last_ = run_so_far;
    last_time_ = std::chrono::steady_clock::now();
  }
  if (every_ <= 0 || stages.empty() || stages.front().optimizer_steps < next_) return;
  if (run_so_far.micro_batches <= last_.micro_batches) return;  // no loss of the window yet: wait for it
  const int64_t steps = stages.front().optimizer_steps;
  next_ = (steps / every_ + 1) * every_;
  const auto now = std::chrono::steady_clock::now();
  const double window_seconds = std::chrono::duration<double>(now - last_time_).count();
  const run_totals window = run_so_far.since(last_);
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
  last_ = run_so_far;
  last_time_ = now;
}

}  // namespace petra

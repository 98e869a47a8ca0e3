// A run's epoch lines and summary.
#include "training/run_records.hpp"

#include <cstdio>

#include "training/metrics_records.hpp"
#include "training/pipeline_balance.hpp"
#include "training/setup.hpp"
#include "training/stage_metrics.hpp"
#include "training/stage_threads.hpp"
#include "training/throughput.hpp"

namespace petra {
namespace {

double seconds_since(run_records::clock_type::time_point t0) {
  return std::chrono::duration<double>(run_records::clock_type::now() - t0).count();
}

}  // namespace

run_records::run_records(prepared_run& p, run_dir& dir, progress& bar, bool resumed)
    : p_(p),
      dir_(dir),
      bar_(bar),
      resumed_(resumed),
      J_(stage_sizes(p.cfg).size()),
      logged_in_file_(resumed ? dir.last_logged_epoch() : 0),
      process_from_(p.completed_before),
      stage1_from_(p.completed_before) {}

void run_records::start() { run_start_ = epoch_clock_ = clock_type::now(); }

void run_records::phase_started() { phase_clock_ = clock_type::now(); }

void run_records::phase_ended(int64_t samples) {
  train_seconds_ += seconds_since(phase_clock_);
  phase_clock_ = {};
  train_images_ += samples;
}

void run_records::log_epoch(const epoch_result& e) {
  bar_.break_line();
  const config::run_config& cfg = p_.cfg;
  if (e.epoch <= logged_in_file_) dir_.forget_epochs_from(e.epoch);  // this line replaces it
  logged_in_file_ = e.epoch;
  last_test_accuracy_ = e.test.accuracy;
  double seconds = seconds_since(epoch_clock_) - eval_seconds_;
  int64_t timed_from = process_from_;  // this process's clock started where it resumed
  // Without a drain epochs overlap, and an epoch's record is whole only once its evaluation wave
  // passed every stage, maybe late in the next epoch: its time is then stage 1's, from its
  // previous epoch's last backward to this one's (or from where its clock started: the process's
  // start, or its last restart).
  if (waves() && !e.stages.empty() && e.stages.front().wall_seconds > 0) {
    seconds = e.stages.front().wall_seconds;
    timed_from = stage1_from_;
  }
  // The images trained in that time: not the epoch's micro-batches before the clock started.
  const int64_t images =
      timed_epoch_images(e.epoch, p_.per_epoch, cfg.training.micro_batch, e.train.samples, timed_from);
  epoch_clock_ = clock_type::now();
  eval_seconds_ = 0;
  epoch_record line;
  for (std::size_t j = 0; j < e.stages.size(); ++j)
    line.stages.push_back(stage_line(e.stages[j], e.faults[j], cfg, J_));
  for (const data::bad_image& bad : p_.data.new_bad_images())
    dir_.log({{"event", "bad_image"}, {"path", bad.path}, {"reason", bad.reason}});
  const double waited = p_.data.train_feed->waited_seconds();
  const double images_per_s = images_per_second(images, seconds);
  line.epoch = e.epoch;
  line.runtime = config::to_string(cfg.runtime.mode);
  line.evaluated = waves() ? "live weights (evaluation wave)" : "drained pipeline";
  line.train_loss = e.train.mean_loss();
  line.train_accuracy = e.train.accuracy();
  line.test_loss = e.test.loss;
  line.test_accuracy = e.test.accuracy;
  line.images_per_s = images_per_s;
  line.epoch_seconds = seconds;
  // Stage 1's rate after its epoch-end step count, not the live one: without a drain the record
  // arrives during the next epoch, and an actor runtime learns stage 1's count only at a phase end.
  if (!e.stages.empty()) line.lr = p_.runtime->first_stage_lr(e.stages.front().weight_version);
  line.loader_wait_seconds = waited - waited_before_;
  line.bad_images = p_.data.bad_image_count();
  // The actor runtimes' stages measured their busy time over the same window.
  const int cores = usable_cores();
  const std::optional<pipeline_balance> balance = balance_of(
      line.stages, static_cast<double>(images), images_per_s, {local_cpu_threads(cfg, cores), cores});
  if (balance) {
    line.busiest_stage = balance->busiest_stage;
    line.ideal_images_per_s = balance->ideal_images_per_s;
    line.pipeline_efficiency = balance->efficiency;
    line.compute_over_busiest = balance->compute_over_busiest;
    if (balance->cores > 0) {
      line.cores_ideal_images_per_s = balance->cores_ideal_images_per_s;
      line.cores_efficiency = balance->cores_efficiency;
    }
  }
  dir_.log(json_record::write(line));
  waited_before_ = waited;
  std::printf("epoch %d/%d  train loss %.4f acc %.2f%%  test loss %.4f acc %.2f%%  %.0f img/s  %.1f s\n",
              e.epoch, cfg.training.epochs, e.train.mean_loss(), 100 * e.train.accuracy(), e.test.loss,
              100 * e.test.accuracy, images_per_s, seconds);
  if (balance) std::printf("  %s\n", balance_text(*balance).c_str());
  std::fflush(stdout);
}

void run_records::summarize(const accounting& account) {
  const double wall = seconds_since(run_start_);
  // Only what this process trained, over its training time (a resumed run's earlier part is not
  // in either).
  const double images_per_s = images_per_second(train_images_, train_seconds_);
  summary_record line;
  line.status = "finished";
  line.test_accuracy = last_test_accuracy_;
  line.micro_batches = account;
  line.wall_seconds = wall;
  line.train_seconds = train_seconds_;
  line.images_per_s = images_per_s;
  dir_.log(json_record::write(line));
  std::string resumed;
  if (resumed_)
    resumed = " (resumed: " + std::to_string(account.completed) + " of the run's " +
              std::to_string(p_.cfg.training.epochs * p_.per_epoch) +
              " micro-batches trained in this process)";
  std::printf("done: test accuracy %.2f%%, wall %.1f s, %.0f img/s training%s -> %s\n",
              100 * last_test_accuracy_.value_or(0.0), wall, images_per_s, resumed.c_str(),
              dir_.path().c_str());
  std::fflush(stdout);  // through a pipe too, the line comes when the run is done, not at the exit
}

void run_records::summarize_failure(const accounting& account, const std::string& what) {
  try {
    summary_record line;
    line.status = "failed";
    line.what = what;
    line.test_accuracy = last_test_accuracy_;
    line.micro_batches = account;
    line.wall_seconds = seconds_since(run_start_);
    line.train_seconds =
        train_seconds_ + (phase_clock_ == clock_type::time_point{} ? 0.0 : seconds_since(phase_clock_));
    dir_.log(json_record::write(line));
    bar_.break_line();
    account.print();
  } catch (const std::exception&) {  // (the disk is full, say): the failure itself is what to report
  }
}

}  // namespace petra

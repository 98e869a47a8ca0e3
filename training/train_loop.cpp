// The trainer loop. Every input is checked before anything is written; a failed phase rolls back
// to the last checkpoint and is replayed, up to faults.max_restarts.
#include "training/train_loop.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>

#include "compute/serialize/atomic_file.hpp"
#include "training/accounting.hpp"
#include "training/conv_algorithm_file.hpp"
#include "training/metrics_records.hpp"
#include "training/migration.hpp"
#include "training/pipeline_balance.hpp"
#include "training/prepared_run.hpp"
#include "training/progress.hpp"
#include "training/rebalance.hpp"
#include "training/restore_points.hpp"
#include "training/run_dir.hpp"
#include "training/setup.hpp"
#include "training/snapshot.hpp"
#include "training/stage_metrics.hpp"
#include "training/step_lines.hpp"

namespace petra {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

class run {
 public:
  run(prepared_run& p, const train_options& options, run_dir& dir)
      : p_(p),
        options_(options),
        dir_(dir),
        bar_(p.cfg.output.progress),
        J_(stage_sizes(p.cfg).size()),
        steps_(p.cfg.output.metrics_every_steps, p.opt, dir,
               options.resume.empty() ? run_dir::logged_step{} : dir.last_logged_step()),
        points_(p, options, dir),
        last_logged_epoch_(options.resume.empty() ? 0 : dir.last_logged_epoch()),
        initial_partition_(stage_sizes(p.cfg)),
        migrations_(p, dir) {
    if (p.cfg.pipeline.rebalance) rebalancer_ = std::make_unique<rebalancer>(p.cfg);
  }

  int go() {
    const auto run_start = clock_type::now();
    epoch_clock_ = run_start;
    if (options_.resume.empty()) points_.checkpoint(p_.epoch, p_.position);  // the first rollback target
    const int64_t per_epoch = p_.per_epoch;
    const int64_t end =
        p_.cfg.training.epochs * per_epoch;  // positions count from epoch 1's first micro-batch
    for (int64_t g = (p_.epoch - 1) * per_epoch + p_.position; g < end;) {
      // A run resumed from a snapshot continues the phase the snapshot was taken in.
      const bool resumed = g == (p_.epoch - 1) * per_epoch + p_.position && p_.resume_cut;
      const int64_t next = resumed ? g + p_.resume_count : points_.phase_end(g, end);
      phase_request request;
      request.epoch = static_cast<int>(g / per_epoch) + 1;
      request.first = g % per_epoch;
      request.count = next - g;
      request.evaluation_waves = waves();
      request.cut_before = points_.cuts_in(g, next);
      if (resumed) request.resume = p_.resume_cut;
      resume_position_ = resumed ? p_.resume_position : g;
      const auto t0 = clock_type::now();
      const phase_result phase = run_phase(request);
      train_seconds_ += seconds_since(t0);
      train_images_ += phase.samples;
      run_done_ += phase;
      bar_.break_line();                         // the phase's line ends with it
      for (epoch_result& e : drained_epochs_) {  // drained epochs: evaluated now, on the drained weights
        const auto e0 = clock_type::now();
        e.test = p_.runtime->evaluate(*p_.data.test_feed);
        e.evaluated = true;
        eval_seconds_ += seconds_since(e0);
        log_epoch(e);
      }
      drained_epochs_.clear();
      g = next;
      const int epoch = static_cast<int>((g - 1) / per_epoch) + 1;  // the epoch g ends or lies in
      points_.checkpoint(epoch, g - (epoch - 1) * per_epoch);
      if (rebalancer_ && g < end && rebalance(g, phase))
        points_.checkpoint(epoch, g - (epoch - 1) * per_epoch);
      if (g < end) migrations_.at_point(g, run_done_.ticks);
      if (options_.stop_after_epoch > 0 && g == options_.stop_after_epoch * per_epoch && g < end) {
        std::printf("stopped after epoch %d as asked; continue with: petra train --resume %s\n", epoch,
                    dir_.path().c_str());
        return 0;
      }
    }
    migrations_.at_end();
    summarize(seconds_since(run_start));
    if (p_.cfg.output.trace) {
      p_.runtime->write_trace(dir_.file("trace.json"));
      std::printf("trace: %s -> %s\n", describe(p_.trace).c_str(), dir_.file("trace.json").c_str());
    }
    return 0;
  }

 private:
  /// Epochs evaluated on the live weights by waves inside the stream (no drain at epoch ends).
  bool waves() const { return !p_.cfg.training.drain_at_epoch_end; }

  /// One phase, replayed from the last checkpoint after each failure, up to faults.max_restarts
  /// recoveries of the phase (rollbacks and stage-local ones together).
  phase_result run_phase(const phase_request& request) {
    const int64_t phase_start = (request.epoch - 1) * p_.per_epoch + request.first;
    // faults.max_restarts bounds the recoveries of one phase: a phase that cannot complete within
    // them ends the run; a later phase starts with none (an async run with evaluation waves is
    // one phase: there it is the whole run's).
    const int64_t restarts_before = account_.restarts, local_before = account_.local_recoveries;
    const auto limit_reached = [&] {
      return (account_.restarts - restarts_before) + (account_.local_recoveries - local_before) >=
             p_.cfg.faults.max_restarts;
    };
    bar_.begin_phase(p_.cfg.training.epochs, p_.per_epoch, phase_start, request.resume != nullptr);
    const progress_fn progress = [&](const progress_sample& sample) {
      bar_.update(sample.totals);
      run_totals in_run = run_done_;
      in_run += sample.totals;
      // The step lines' place in the stream: the micro-batch whose backward ended stage 1's window
      // (the same in every runtime; epoch 1's ids start at per_epoch); else the micro-batches scored.
      const int64_t ended_by = sample.stages.empty() ? -1 : sample.stages.front().ended_by;
      const int64_t position =
          ended_by >= 0 ? ended_by + 1 - p_.per_epoch : phase_start + sample.totals.micro_batches;
      steps_.observe(epoch_at(position, p_.per_epoch), position, in_run, sample.stages);
    };
    const epoch_fn on_epoch = [&](const epoch_result& e) {
      if (e.epoch <= last_logged_epoch_) return;  // a replay after a rollback: logged already
      if (e.evaluated)
        log_epoch(e);
      else
        drained_epochs_.push_back(e);
    };
    for (phase_request attempt = request;; ++attempt.attempt) {
      const cut_fn on_cut = [&](int64_t index, const pipeline_cut& cut) {
        points_.snapshot(request, index, cut);
      };
      if (p_.cfg.faults.recovery ==
          config::recovery_scope::local) {  // rebuild only the lost stages where the runtime can
        attempt.local_state = [&](std::size_t j) -> std::optional<restored_stage> {
          if (limit_reached()) return std::nullopt;
          return points_.stage_state(j);
        };
        attempt.on_local_recovery = [&](const local_recovery& r) {
          account_.add_local(r);
          dir_.log(local_recovery_line(r, request.epoch, request.first));
        };
      }
      // The attempt keeps none of the cut it resumes from: the runtime's request is its only holder and
      // lets the tensors go once the stages have them (else a rollback's snapshot stayed to the phase's end).
      const int64_t resumed_completed = attempt.resume ? attempt.resume->completed : 0;
      phase_request call = attempt;
      call.resume = std::move(attempt.resume);
      try {
        phase_result result = p_.runtime->train(std::move(call), progress, on_epoch, on_cut);
        account_.add_phase(result.completed, result.faults);
        return result;
      } catch (const run_failure& e) {
        if (limit_reached()) throw;
        const auto t0 = clock_type::now();
        // Back to the last snapshot of this phase, else to where the phase started (its cut or
        // the checkpoint); what the attempt completed after that point is undone and replayed.
        const bool to_snapshot = points_.last_snapshot() > phase_start;
        attempt.resume = to_snapshot ? read_snapshot(dir_.path(), J_).cut : request.resume;
        const int64_t restart_at = to_snapshot ? points_.last_snapshot() : resume_position_;
        const int64_t replay = phase_start + request.count - restart_at;
        const int64_t before_restart = (attempt.resume ? attempt.resume->completed : 0) - resumed_completed;
        const int64_t kept = e.completed < 0 ? before_restart : std::min(e.completed, before_restart);
        std::printf(
            "\n%s; rolling back to the %s at micro-batch %lld of the run and replaying %lld micro-batches\n",
            e.what(), attempt.resume ? "snapshot" : "checkpoint", static_cast<long long>(restart_at),
            static_cast<long long>(replay));
        std::fflush(stdout);
        p_.runtime->recover();
        if (!attempt.resume) p_.runtime->restore(read_checkpoint(dir_.file("checkpoint.safetensors"), J_));
        drained_epochs_.clear();
        const double seconds = seconds_since(t0);
        account_.add_failure(e, std::max<int64_t>(0, kept), std::max<int64_t>(0, e.completed - kept), replay,
                             seconds);  // (stage 1 lost: what it had undone is not known)
        rollback_record line;
        line.epoch = request.epoch;
        line.position = request.first;
        line.kind = to_string(e.kind());
        if (e.stage() >= 0) line.stage = e.stage() + 1;
        line.tick = e.tick();
        line.what = e.what();
        line.attempt = attempt.attempt;
        if (e.completed >= 0) line.completed_before_failure = e.completed;
        line.faults_injected = total(e.faults).injected();
        line.duplicates_discarded = total(e.faults).duplicates_discarded;
        line.recovery_seconds = seconds;
        line.restored_from = attempt.resume ? "snapshot" : "checkpoint";
        line.recovery = e.not_local.empty() ? "global" : "global (" + e.not_local + ")";
        line.replayed_micro_batches = replay;
        dir_.log(json_record::write(line));
      }
    }
  }

  /// At the drained point before micro-batch g of the run: moves a block if the rule (or a forced move)
  /// says so, from the stages' busy time in the phase that ended here. Returns whether it moved one.
  bool rebalance(int64_t g, const phase_result& phase) {
    std::vector<double> busy;
    for (const stage_report& r : phase.stages) busy.push_back(r.phase_busy_seconds);
    const std::vector<int> sizes = stage_sizes(p_.cfg);
    const std::optional<rebalance_move> move = rebalancer_->decide(g, sizes, busy);
    if (!move) return false;
    // The model's state before and right after the move: the same, or the move lost something.
    const uint64_t checksum = model_checksum(p_.runtime->snapshot());
    const auto t0 = clock_type::now();
    p_.runtime->repartition(move->after);
    const double move_seconds = seconds_since(t0);
    const uint64_t restored = model_checksum(p_.runtime->snapshot());
    p_.cfg.pipeline.stage_blocks = move->after;  // the checkpoints' config and partition follow it
    ++moves_;
    nlohmann::json line = rebalance_line(*move, g, run_done_.ticks, steps_.seconds());
    line["checksum"] = checksum_text(checksum);
    line["restored_checksum"] = checksum_text(restored);
    line["move_seconds"] = move_seconds;
    dir_.log(line);
    bar_.break_line();
    std::string busy_text;
    for (double b : busy) {
      char number[32];
      std::snprintf(number, sizeof number, "%s%.3f", busy_text.empty() ? "" : " ", b);
      busy_text += number;
    }
    std::printf(
        "rebalance before micro-batch %lld: block %d moves from stage %d to stage %d%s (busy s: %s)\n",
        static_cast<long long>(g), move->block + 1, move->from + 1, move->to + 1,
        move->forced ? " as pipeline.rebalance_moves says" : "", busy_text.c_str());
    std::fflush(stdout);
    return true;
  }

  /// The epoch line of metrics.jsonl and the terminal's.
  void log_epoch(const epoch_result& e) {
    bar_.break_line();
    const config::run_config& cfg = p_.cfg;
    last_logged_epoch_ = e.epoch;
    last_test_accuracy_ = e.test.accuracy;
    double seconds = seconds_since(epoch_clock_) - eval_seconds_;
    // Without a drain epochs overlap, and an epoch's record is whole only once its evaluation wave
    // passed every stage, maybe late in the next epoch: its time is then stage 1's, from its
    // previous epoch's last backward to this one's.
    if (waves() && !e.stages.empty() && e.stages.front().wall_seconds > 0)
      seconds = e.stages.front().wall_seconds;
    epoch_clock_ = clock_type::now();
    eval_seconds_ = 0;
    epoch_record line;
    for (std::size_t j = 0; j < e.stages.size(); ++j)
      line.stages.push_back(stage_line(e.stages[j], e.faults[j], cfg, J_));
    for (const data::bad_image& bad : p_.data.new_bad_images())
      dir_.log({{"event", "bad_image"}, {"path", bad.path}, {"reason", bad.reason}});
    const double waited = p_.data.train_feed->waited_seconds();
    const double images_per_s = seconds > 0 ? e.train.samples / seconds : 0.0;
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
    const std::optional<pipeline_balance> balance =
        balance_of(line.stages, static_cast<double>(e.train.samples), images_per_s);
    if (balance) {
      line.busiest_stage = balance->busiest_stage;
      line.ideal_images_per_s = balance->ideal_images_per_s;
      line.pipeline_efficiency = balance->efficiency;
      line.compute_over_busiest = balance->compute_over_busiest;
    }
    dir_.log(json_record::write(line));
    waited_before_ = waited;
    std::printf("epoch %d/%d  train loss %.4f acc %.2f%%  test loss %.4f acc %.2f%%  %.0f img/s  %.1f s\n",
                e.epoch, cfg.training.epochs, e.train.mean_loss(), 100 * e.train.accuracy(), e.test.loss,
                100 * e.test.accuracy, images_per_s, seconds);
    if (balance) std::printf("  %s\n", balance_text(*balance).c_str());
    std::fflush(stdout);
  }

  void summarize(double wall) {
    const double images_per_s = train_seconds_ > 0 ? train_images_ / train_seconds_ : 0.0;
    summary_record line;
    line.test_accuracy = last_test_accuracy_;
    line.micro_batches = account_;
    line.wall_seconds = wall;
    line.train_seconds = train_seconds_;
    line.images_per_s = images_per_s;
    dir_.log(json_record::write(line));
    std::printf("done: test accuracy %.2f%%, wall %.1f s, %.0f img/s training -> %s\n",
                100 * last_test_accuracy_, wall, images_per_s, dir_.path().c_str());
    if (rebalancer_) {
      const std::vector<int> final_partition = stage_sizes(p_.cfg);
      dir_.log({{"event", "partition"},
                {"stage_blocks", final_partition},
                {"initial_stage_blocks", initial_partition_},
                {"moves", moves_}});
      auto text = [](const std::vector<int>& sizes) {
        std::string out;
        for (int n : sizes) out += (out.empty() ? "[" : ",") + std::to_string(n);
        return out + "]";
      };
      std::printf("rebalance: %d move(s) in this process; blocks per stage %s at the start, %s at the end\n",
                  moves_, text(initial_partition_).c_str(), text(final_partition).c_str());
    }
    account_.print();
  }

  prepared_run& p_;
  const train_options& options_;
  run_dir& dir_;
  progress bar_;
  std::size_t J_;
  step_lines steps_;
  restore_points points_;
  accounting account_;
  run_totals run_done_;                       // the phases finished so far in this process
  std::vector<epoch_result> drained_epochs_;  // ended in the running phase, to evaluate when it drained
  int last_logged_epoch_ = 0;
  int64_t resume_position_ = 0;         // where the running phase started: the last checkpoint or resumed cut
  clock_type::time_point epoch_clock_;  // since the previous epoch line
  double eval_seconds_ = 0;             // drained evaluations since then (not training time)
  double waited_before_ = 0;            // the loader's waited time at the previous epoch line
  double train_seconds_ = 0;
  int64_t train_images_ = 0;
  double last_test_accuracy_ = 0;
  std::vector<int> initial_partition_;      // blocks per stage when this process started
  std::unique_ptr<rebalancer> rebalancer_;  // pipeline.rebalance
  int moves_ = 0;
  migration_desk migrations_;  // pipeline.migrate and `petra migrate`
};

}  // namespace

int run_training(const train_options& options, const runtime_factory& make_runtime) {
  prepared_run p;
  try {
    p = prepare(options, make_runtime);
  } catch (const std::exception& e) {
    std::cerr << "petra train: " << e.what() << "\n";
    return 2;
  }
  try {
    run_dir dir = options.resume.empty() ? run_dir::create(p.run_path) : run_dir::reopen(p.run_path);
    if (options.on_run_dir) options.on_run_dir(dir.path());
    if (options.resume.empty()) {
      // Saved without output.name, so that `petra train <run>/config.yaml` repeats the run into a new
      // directory.
      config::run_config repeatable = p.cfg;
      repeatable.output.name.clear();
      write_file_atomically(dir.file("config.yaml"),
                            [&](std::ostream& out) { out << config::to_yaml(repeatable); });
      if (auto names = p.data.train->class_names(); !names.empty())
        data::write_class_index(names, dir.path());
    }
    std::printf(
        "petra train: %s, %s, runtime %s, J = %zu stages, %lld micro-batches of %d per epoch, k = %d, lr "
        "%.4g%s -> %s\n",
        config::to_string(p.cfg.model.arch).c_str(), p.method.str().c_str(),
        config::to_string(p.cfg.runtime.mode).c_str(), stage_sizes(p.cfg).size(),
        static_cast<long long>(p.per_epoch), p.cfg.training.micro_batch, p.cfg.training.accumulation,
        p.opt.lr,
        options.resume.empty() ? ""
        : p.resume_cut         ? (" (resuming inside epoch " +
                          std::to_string((p.resume_position - 1) / p.per_epoch + 1) + " from its snapshot)")
                             .c_str()
                       : (" (resuming epoch " + std::to_string(p.epoch) + " at micro-batch " +
                          std::to_string(p.position) + ")")
                             .c_str(),
        dir.path().c_str());
    std::fflush(stdout);
    const int status = run(p, options, dir).go();
    // The algorithms this process's GPU stages chose, so that a run can repeat them
    // (runtime.cudnn_algorithms); nothing without a GPU stage here.
    write_conv_algorithms(p.cfg, dir.path());
    return status;
  } catch (const stopped_at_snapshot& s) {
    std::printf("\nstopped after the snapshot before micro-batch %lld as asked\n",
                static_cast<long long>(s.position));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "\npetra train: failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace petra

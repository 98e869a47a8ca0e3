// The trainer loop. Every input is checked before anything is written; a failed phase rolls back
// to the last checkpoint and is replayed, up to faults.max_restarts.
#include "training/train_loop.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>

#include "training/accounting.hpp"
#include "training/metrics_records.hpp"
#include "training/migration.hpp"
#include "training/prepared_run.hpp"
#include "training/progress.hpp"
#include "training/rebalance.hpp"
#include "training/restore_points.hpp"
#include "training/run_dir.hpp"
#include "training/run_records.hpp"
#include "training/setup.hpp"
#include "training/snapshot.hpp"
#include "training/stage_metrics.hpp"
#include "training/step_lines.hpp"
#include "training/trace_window.hpp"

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
               options.resume.empty() ? run_dir::logged_step{} : dir.last_logged_step(),
               !options.resume.empty()),
        points_(p, options, dir),
        records_(p, dir, bar_, !options.resume.empty()),
        initial_partition_(stage_sizes(p.cfg)),
        migrations_(p, dir) {
    if (p.cfg.pipeline.rebalance) rebalancer_ = std::make_unique<rebalancer>(p.cfg);
    account_.completed_before_resume = p.completed_before;
  }

  /// Trains to the end (or the stop asked for). A run that gives up ends its process's record with a
  /// failed summary before the exception goes on.
  int go() {
    records_.start();
    try {
      return train();
    } catch (const std::exception& e) {
      records_.summarize_failure(account_, e.what());
      throw;
    }
  }

 private:
  int train() {
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
      // A phase resumed from a cut carries the totals of what earlier processes trained before it.
      const int64_t samples_before = resumed ? p_.resume_cut->totals.samples : 0;
      records_.phase_started();
      const phase_result phase = run_phase(request);
      records_.phase_ended(phase.samples - samples_before);
      run_done_ += phase;
      bar_.break_line();  // the phase's line ends with it
      if (!drained_epochs_.empty() && p_.cfg.training.bn_recalibration > 0) {
        const auto e0 = clock_type::now();  // the statistics of the drained weights, before their test
        p_.runtime->recalibrate(*p_.data.calibration_feed, p_.cfg.training.bn_recalibration);
        records_.evaluated(seconds_since(e0));
      }
      for (epoch_result& e : drained_epochs_) {  // drained epochs: evaluated now, on the drained weights
        const auto e0 = clock_type::now();
        e.test = p_.runtime->evaluate(*p_.data.test_feed);
        e.evaluated = true;
        records_.evaluated(seconds_since(e0));
        records_.log_epoch(e);
      }
      drained_epochs_.clear();
      g = next;
      const int epoch = static_cast<int>((g - 1) / per_epoch) + 1;  // the epoch g ends or lies in
      points_.checkpoint(epoch, g - (epoch - 1) * per_epoch);
      if (rebalancer_ && g < end && rebalance(g, phase))
        points_.checkpoint(epoch, g - (epoch - 1) * per_epoch);
      if (g < end) migrations_.at_point(g, run_done_.ticks);
      if (options_.stop_after_epoch > 0 && g == options_.stop_after_epoch * per_epoch && g < end) {
        write_trace(g);  // what this process traced up to the stop
        std::printf("stopped after epoch %d as asked; continue with: petra train --resume %s\n", epoch,
                    dir_.path().c_str());
        // Without drain_at_epoch_end an uninterrupted run streams on across this epoch end: the stop
        // drained the pipeline where it would not, so the resumed run is not bit-identical to it.
        if (!p_.cfg.training.drain_at_epoch_end)
          std::printf(
              "(training.drain_at_epoch_end is false: the stop drained the pipeline here, which an "
              "uninterrupted run does not; the resumed run trains the same micro-batches, not the same "
              "bits)\n");
        return 0;
      }
    }
    migrations_.at_end();
    write_trace(end);  // before the summary: a run whose summary is written is complete
    summarize();
    if (options_.on_complete) options_.on_complete();
    return 0;
  }

  /// output.trace: trace.json of what this process trained, up to micro-batch `to` of the run (the
  /// end, or a stop), and the line that says which micro-batches it holds under which ids.
  void write_trace(int64_t to) {
    if (!p_.cfg.output.trace) return;
    p_.runtime->write_trace(dir_.file("trace.json"));
    const int64_t from = p_.resume_cut ? p_.resume_position : (p_.epoch - 1) * p_.per_epoch + p_.position;
    std::printf("trace: %s -> %s\n", describe_traced(p_.trace, p_.per_epoch, from, to).c_str(),
                dir_.file("trace.json").c_str());
  }

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
      // The micro-batches scored run ahead of stage 1's backward: its window ended that many earlier.
      const int64_t scored = phase_start + sample.totals.micro_batches;
      steps_.observe(epoch_at(position, p_.per_epoch), position, in_run, sample.stages,
                     in_run.micro_batches - std::max<int64_t>(0, scored - position));
      scored_at_ = scored;
    };
    // Every epoch that ends is logged, also one an undone attempt logged already (its line goes).
    const epoch_fn on_epoch = [&](const epoch_result& e) {
      if (e.evaluated)
        records_.log_epoch(e);
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
          // A stage 1 rebuilt starts its epoch clock again: about where the stream stands now.
          if (!r.stages.empty() && r.stages.front() == 0) records_.stage1_restarted(scored_at_);
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
        const auto t0 = clock_type::now();
        // Back to the last snapshot of this phase, else to where the phase started (its cut or
        // the checkpoint); what the attempt completed after that point is undone and replayed.
        const bool to_snapshot = points_.last_snapshot() > phase_start;
        attempt.resume = to_snapshot ? read_snapshot(dir_.path(), J_).cut : request.resume;
        const char* restore_point = attempt.resume ? "snapshot" : "checkpoint";
        const int64_t restart_at = to_snapshot ? points_.last_snapshot() : resume_position_;
        const int64_t replay = phase_start + request.count - restart_at;
        const int64_t before_restart = (attempt.resume ? attempt.resume->completed : 0) - resumed_completed;
        const int64_t kept =
            std::max<int64_t>(0, e.completed < 0 ? before_restart : std::min(e.completed, before_restart));
        if (limit_reached()) {
          const int n = p_.cfg.faults.max_restarts;
          give_up(e, request, attempt.attempt, kept,
                  n == 0 ? "faults.max_restarts is 0: no recovery is tried"
                         : "faults.max_restarts (" + std::to_string(n) +
                               ") recoveries of this phase made already");
        }
        std::printf("\n%s; rolling back to the %s at micro-batch %lld of the run\n", e.what(), restore_point,
                    static_cast<long long>(restart_at));
        std::fflush(stdout);
        try {
          p_.runtime->recover();
          if (!attempt.resume) p_.runtime->restore(read_checkpoint(dir_.file("checkpoint.safetensors"), J_));
        } catch (const std::exception& failed) {  // no spare node for a lost one, say
          give_up(e, request, attempt.attempt, kept,
                  std::string("the rollback to the ") + restore_point + " failed: " + failed.what());
        }
        std::printf("rolled back; replaying %lld micro-batches\n", static_cast<long long>(replay));
        std::fflush(stdout);
        // The replay restarts the stages' epoch clocks where it starts.
        records_.stage1_restarted(phase_start + (attempt.resume ? attempt.resume->completed : 0));
        drained_epochs_.clear();
        const double seconds = seconds_since(t0);
        account_.add_failure(e, kept, std::max<int64_t>(0, e.completed - kept), replay,
                             seconds);  // (stage 1 lost: what it had undone is not known)
        rollback_record line = rollback_line(e, request.epoch, request.first, attempt.attempt);
        line.recovery_seconds = seconds;
        line.restored_from = restore_point;
        line.recovery = e.not_local.empty() ? "global" : "global (" + e.not_local + ")";
        line.replayed_micro_batches = replay;
        dir_.log(json_record::write(line));
      }
    }
  }

  /// The failed attempt `attempt` of `request` ends the run (`why`): its failure line says so, and
  /// the micro-batches it completed before the restore point a resume continues from (`kept`) count.
  [[noreturn]] void give_up(const run_failure& e, const phase_request& request, int attempt, int64_t kept,
                            const std::string& why) {
    account_.add_given_up(e, kept);
    rollback_record line = rollback_line(e, request.epoch, request.first, attempt);
    line.recovery = "none";
    line.gave_up = why;
    dir_.log(json_record::write(line));
    throw std::runtime_error(std::string(e.what()) + "; the run gives up: " + why);
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
        move->forced ? " as testing.rebalance_moves says" : "", busy_text.c_str());
    std::fflush(stdout);
    return true;
  }

  void summarize() {
    records_.summarize(account_);
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
  run_records records_;  // the epoch lines and the summary
  accounting account_;
  run_totals run_done_;                       // the phases finished so far in this process
  std::vector<epoch_result> drained_epochs_;  // ended in the running phase, to evaluate when it drained
  int64_t scored_at_ = 0;               // micro-batches of the run scored, as the last progress report said
  int64_t resume_position_ = 0;         // where the running phase started: the last checkpoint or resumed cut
  std::vector<int> initial_partition_;  // blocks per stage when this process started
  std::unique_ptr<rebalancer> rebalancer_;  // pipeline.rebalance
  int moves_ = 0;
  migration_desk migrations_;  // pipeline.migrate and `petra migrate`
};

}  // namespace

int train_prepared(prepared_run& p, const train_options& options, run_dir& dir) {
  return run(p, options, dir).go();
}

}  // namespace petra

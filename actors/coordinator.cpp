// The actor runtime, driven from the trainer's thread: the coordinator actor takes the pipeline's
// events, this thread starts phases and acts on them; never on the hot path (stages talk to each
// other directly), only at phase boundaries.
#include "actors/coordinator.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <cstdio>
#include <functional>
#include <string>

#include "actors/caf_config.hpp"
#include "actors/coordinator_cuts.hpp"
#include "actors/local_recovery.hpp"
#include "actors/migration.hpp"
#include "actors/pipeline.hpp"
#include "actors/stall.hpp"
#include "training/free_memory.hpp"
#include "training/input_schedule.hpp"
#include "training/rebalance.hpp"
#include "training/runtime_support.hpp"
#include "training/setup.hpp"
#include "training/shutdown_watch.hpp"
#include "training/snapshot.hpp"
#include "training/stage_threads.hpp"
#include "training/tick_schedule.hpp"

namespace petra {
namespace {

using namespace messages;
using namespace atoms;

constexpr auto status_timeout = std::chrono::seconds(10);
// A fault event sent before a stage's report reaches the coordinator actor in microseconds locally, and
// over a node's link in milliseconds: the wait for the last ones is bounded all the same.
constexpr auto fault_events_timeout = std::chrono::seconds(10);

/// Notes a teardown step for training::shutdown_watch when it is destroyed. Declared between the
/// runtime's members, it runs when the members declared after it are gone and before the ones
/// declared before it go.
struct teardown_step {
  std::function<std::string()> what;
  ~teardown_step() { training::shutdown_watch::note_step(what()); }
};

/// The timeline of output.trace: micro-batches output.trace_steps of the run (the first epoch's
/// ids start at `per_epoch`); null when off.
std::shared_ptr<training::trace_recorder> make_recorder(const config::run_config& c, int64_t per_epoch) {
  if (!c.output.trace) return nullptr;
  return std::make_shared<training::trace_recorder>(per_epoch + c.output.trace_steps[0],
                                                    per_epoch + c.output.trace_steps[1]);
}

class actor_runtime : public pipeline_runtime {
 public:
  actor_runtime(const config::run_config& c, const optimizer_settings& optimizer, training_data& data)
      : config_(c),
        optimizer_(optimizer),
        per_epoch_(data.train_feed->micro_batches_per_epoch()),
        wave_size_(data.wave_feed->micro_batches_per_epoch()),
        trace_(make_recorder(c, per_epoch_)),
        caf_(scheduler_threads(c, usable_cores()), c.tls, c.runtime.heartbeat_timeout),
        system_(caf_),
        control_(system_, std::chrono::seconds(c.faults.stall_seconds)),
        pipeline_(c, optimizer, data.train_feed, data.wave_feed, control_, trace_),
        stages_(stage_sizes(c).size()) {
    if (trace_) trace_track_ = trace_->track("coordinator", "coordinator");
    pipeline_.build();
  }

  ~actor_runtime() override {
    report_late_messages();
    training::shutdown_watch::note_step("stopping the pipeline's actors");
  }

  bool takes_cuts() const override { return actors_take_cuts(config_); }

  phase_result train(phase_request request, const progress_fn& progress, const epoch_fn& on_epoch,
                     const cut_fn& on_cut) override {
    const bool lockstep = config_.runtime.mode == config::runtime_mode::lockstep;
    const int64_t phase_start = (request.epoch - 1) * per_epoch_ + request.first;  // in the run
    const int64_t extra =
        request.attempt == 0 && lockstep ? link_delay_ticks(config_) : 0;  // a replay runs clean
    const int64_t spacing = pipeline_entry_spacing(config_, extra);
    const int64_t wave = request.evaluation_waves ? wave_size_ : 0;
    const input_schedule::shape shape =
        input_schedule::plan(per_epoch_, wave, spacing, request.first, request.count, stages_);
    phase_plan plan;
    plan.epoch = request.epoch;
    plan.micro_batches = request.count;
    plan.ticks = shape.ticks + extra;
    plan.first_micro_batch = request.first;
    plan.spacing = spacing;
    plan.attempt = request.attempt;
    plan.generation = pipeline_.generation();
    plan.phase = ++phase_;
    plan.per_epoch = per_epoch_;
    plan.eval_items = shape.eval_items;
    if (takes_cuts()) {
      for (int64_t index : request.cut_before) plan.cut_ticks.push_back(index * spacing);
      if (request.resume) plan.start_tick = request.resume->tick;
      if (request.resume && !lockstep) plan.in_flight = request.resume->in_flight;  // credits held
    }
    phase_result out;
    epoch_collector epochs(stages_, wave, [&](epoch_result& e) {
      e.faults = control_.take_epoch_faults();
      if (on_epoch) on_epoch(e);
      out.epochs.push_back(e);
    });
    control_.begin_attempt(
        stages_,
        [progress](const loss_report& r, const std::vector<stage_window>& windows) {
          if (progress) progress(progress_sample{totals_of(r), windows});
        },
        &epochs);
    const struct detach {
      control_channel& c;
      ~detach() { c.begin_attempt(c.faults().size(), {}, nullptr); }  // the collector lives in this call only
    } detach_epochs{control_};
    control_.on_cuts([&](int64_t tick, std::vector<cut_part>& parts, const nlohmann::json& open) {
      if (on_cut) on_cut(tick / spacing, cut_from_parts(config_, stages_, spacing, tick, parts, open));
    });
    const auto begin = training::trace_clock::now();
    if (request.attempt == 0) pipeline_.send_node_kills();
    try {
      if (plan.start_tick > 0)
        resume_from(control_, pipeline_, *request.resume, epochs, phase_start + plan.start_tick / spacing,
                    per_epoch_);
      // The stages and the loss actor have their parts (copies): from here on only the cut's counts
      // are read, and its tensors would stay in memory to the phase's end.
      if (request.resume) {
        request.resume = std::make_shared<const pipeline_cut>(counts_only(*request.resume));
        training::return_free_memory();  // the replaced stages' state and the cut's tensors
      }
      control_.gather<plan_atom>(pipeline_.stages(), control_timeout, plan_atom_v, plan);
      control_.ask<plan_atom>(pipeline_.loader(), control_timeout, plan_atom_v, plan);
      for (bool ended = false; !ended;) {
        try {
          control_.await_phase_ends(stages_, [&] {
            throw diagnose_stall(control_, pipeline_.stages(), lockstep, config_.faults.stall_seconds,
                                 config_.training.method == config::training_method::forward_gradient);
          });
          ended = true;
        } catch (run_failure& failure) {
          if (extra > 0) failure.not_local = "lockstep link delays shift the ticks";
          const bool fg = config_.training.method == config::training_method::forward_gradient;
          if (fg) failure.not_local = "forward gradients' stages hold guesses a rebuilt stage does not have";
          if (extra > 0 || fg) throw;
          bool recovered = false;
          try {
            recovered = recover_stages(pipeline_, control_, failure, plan, lockstep, request);
          } catch (run_failure& during) {
            // Every global rollback says why it was not a local one: here a second failure broke
            // off the rebuilding of the first's stages.
            if (during.not_local.empty())
              during.not_local =
                  std::string("it came during the stage-local recovery from \"") + failure.what() + "\"";
            throw;
          }
          if (!recovered) {
            if (failure.not_local.empty()) failure.not_local = "faults.recovery: global";
            throw;
          }
        }
      }
      static_cast<run_totals&>(out) =
          totals_of(control_.ask<loss_report>(pipeline_.loss(), control_timeout, report_atom_v));
      out.stages = control_.gather<stage_report>(pipeline_.stages(), control_timeout, report_atom_v);
      out.faults = control_.faults_after(out.stages, fault_events_timeout);
      out.completed =
          control_.ask<stage_status>(pipeline_.stages().front(), control_timeout, status_atom_v).completed;
      // The epochs' last parts (an evaluation wave's score) may still be on their way: every epoch
      // that ends in the phase is whole here (resumed from a cut: or was whole there, and logged).
      control_.await_epochs(epochs, static_cast<int>(phase_start / per_epoch_) + 1,
                            static_cast<int>((phase_start + request.count) / per_epoch_));
      // A phase that ends with its epoch: fault events after the stages' epoch reports (a copy of
      // the epoch's last message, discarded after its original ended the epoch) belong to it too;
      // all are in by now (faults_after), and the next epoch starts from none.
      if (!out.epochs.empty() && (request.first + request.count) % per_epoch_ == 0) {
        const std::vector<fault_counts> rest = control_.take_epoch_faults();
        std::vector<fault_counts>& last = out.epochs.back().faults;
        for (std::size_t j = 0; j < rest.size() && j < last.size(); ++j) last[j] += rest[j];
      }
      out.ticks = lockstep ? plan.ticks : 0;
      report_late_messages();
      const int64_t first_id = static_cast<int64_t>(request.epoch) * per_epoch_ + request.first;
      if (trace_ && trace_->records(first_id))
        trace_->span(trace_track_, "phase", begin, training::trace_clock::now(), first_id,
                     {{"epoch", request.epoch}, {"micro_batches", request.count}});
      return out;
    } catch (run_failure& failure) {
      if (failure.not_local.empty())
        failure.not_local =
            config_.faults.recovery == config::recovery_scope::global
                ? "faults.recovery: global"
                : "it came while the phase was starting or ending, not while its stages trained";
      if (failure.kind() == failure_kind::injected_crash) pipeline_.crash_fired(failure.stage());
      if (failure.faults.empty()) failure.faults = control_.faults();  // a stall's: counted until now
      for (std::size_t j = 0; j < failure.faults.size(); ++j)
        if (failure.faults[j].drops > 0) pipeline_.burst_fired(static_cast<int32_t>(j));
      failure.completed = completed_so_far(failure);
      throw;
    }
  }

  eval_result evaluate(data_feed& test) override {
    return petra::evaluate(test, [&](const micro_batch& mb) {
      eval_data x{mb.id, mb.images};
      for (const stage_actor& s : pipeline_.stages()) x = control_.ask<eval_data>(s, control_timeout, x);
      const loss_data out =
          control_.ask<loss_data>(pipeline_.loss(), control_timeout, eval_atom_v,
                                  logits_data{stamp{mb.id}, x.x.x1}, labels_data{mb.id, mb.labels});
      return eval_score{out.loss, out.correct};
    });
  }

  void recalibrate(data_feed& feed, int64_t micro_batches) override {
    petra::calibrate(feed, micro_batches, [&](const micro_batch& mb) {
      eval_data x{mb.id, mb.images, true};
      for (const stage_actor& s : pipeline_.stages()) x = control_.ask<eval_data>(s, control_timeout, x);
    });
  }

  std::vector<stage_snapshot> snapshot() override {
    return control_.gather<stage_snapshot>(pipeline_.stages(), control_timeout, state_atom_v);
  }

  void restore(const checkpoint& from) override {
    const std::vector<stage_snapshot> states = stages_for(from, stage_sizes(config_));
    for (std::size_t j = 0; j < stages_; ++j)
      control_.ask<restore_atom>(pipeline_.stages()[j], control_timeout, restore_atom_v, states[j]);
  }

  // Drained: every stage's state by name, a new generation of actors on the new cut, each stage
  // taking its own tensors. Async has no tick schedule to vouch for the drain: the stages' counts
  // prove it first, as before a migration (once per point). The running epoch's records go on in
  // the new actors (a point may lie inside an epoch): each stage's in the stage at its place, with
  // the epoch's clock, and the loss actor's ledger (the open epoch's loss, accuracy and samples) in
  // the new loss actor, continued as the simulator's driver continues its own.
  void repartition(const std::vector<int>& stage_blocks) override {
    if (config_.runtime.mode == config::runtime_mode::async && drained_proved_at_ != phase_) {
      try {
        require_links_empty(control_, pipeline_.stages(), true);
      } catch (const migration_refused& e) {
        throw std::runtime_error(std::string("no block moves: ") + e.what());
      }
      drained_proved_at_ = phase_;
    }
    const auto kept_at = std::chrono::steady_clock::now();
    std::vector<stage_report> records =
        control_.gather<stage_report>(pipeline_.stages(), control_timeout, report_atom_v);
    const std::string ledger = control_.ask<std::string>(pipeline_.loss(), control_timeout, state_atom_v);
    checkpoint drained;
    drained.stages = snapshot();
    drained.metadata["stage_blocks"] = nlohmann::json(stage_sizes(config_)).dump();
    config_.pipeline.stage_blocks = stage_blocks;
    pipeline_.repartition(stage_blocks);
    restore(drained);
    control_.ask<restore_atom>(pipeline_.loss(), control_timeout, restore_atom_v,
                               cut_part{-1, 0, 0, {}, ledger});
    // The epochs' clocks go on across the rebuild too: it took place inside the running epoch.
    const double rebuild_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - kept_at).count();
    for (std::size_t j = 0; j < stages_; ++j) {
      records[j].wall_seconds += rebuild_seconds;
      control_.ask<restore_atom>(pipeline_.stages()[j], control_timeout, restore_atom_v, records[j]);
    }
  }

  migration_done migrate(std::size_t stage, const config::migration_target& to) override {
    // Later moves at the same point: the same drain, proved already (a moved stage has no counts).
    migration_done done =
        migrate_stage(pipeline_, control_, config_, stage, to, drained_proved_at_ != phase_);
    drained_proved_at_ = phase_;
    return done;
  }

  void recover() override { pipeline_.recover(); }

  double first_stage_lr(int64_t steps) override { return learning_rate(optimizer_, steps); }

  /// The timeline: this process's, and each node's shifted onto this clock (the offset from the
  /// fastest of a few pings, ± half its round trip).
  void write_trace(const std::string& path) override {
    if (!trace_) throw std::logic_error("output.trace is off: no timeline was recorded");
    for (const std::string& where : pipeline_.remote_nodes()) {
      const node_actor node = pipeline_.node(where);
      std::vector<training::ping_sample> pings;
      for (int i = 0; i < 5; ++i) {
        training::ping_sample p;
        p.send_us = training::trace_time_us(training::trace_clock::now());
        p.remote_us = control_.ask<double>(node, control_timeout, ping_atom_v);
        p.receive_us = training::trace_time_us(training::trace_clock::now());
        pings.push_back(p);
      }
      const training::clock_offset offset = training::estimate_clock_offset(pings);
      trace_->merge(control_.ask<std::string>(node, control_timeout, trace_atom_v), offset.offset_us);
      std::printf("trace: node %s's clock offset %.1f ± %.1f µs\n", where.c_str(), offset.offset_us,
                  offset.uncertainty_us);
    }
    trace_->write(path);
  }

 private:
  /// Fencing: the late messages of nodes declared lost (woken up after their stages were moved) that
  /// were dropped since the last line, on a line of their own.
  void report_late_messages() {
    const int64_t late = control_.late_messages();
    if (late == late_reported_) return;
    std::printf("fencing: %lld late message(s) from lost nodes dropped (%lld in all)\n",
                static_cast<long long>(late - late_reported_), static_cast<long long>(late));
    std::fflush(stdout);
    late_reported_ = late;
  }

  /// Micro-batches stage 1 finished in the failed attempt, when it can still say (else -1).
  int64_t completed_so_far(const run_failure& failure) {
    // Stage 1 itself is gone: a message to a dead actor is dropped, and each ask would wait its
    // whole timeout for nothing.
    const bool gone =
        failure.kind() == failure_kind::injected_crash || failure.kind() == failure_kind::lost_actor;
    if (failure.stage() == 0 && gone) return -1;
    // An ask ends at the first event of the failing pipeline still queued (the lost actor's down, a
    // second failure report): ask again while stage 1 answers at all.
    for (int attempt = 0; attempt < 4; ++attempt) {
      try {
        return control_.ask<stage_status>(pipeline_.stages().front(), status_timeout, status_atom_v)
            .completed;
      } catch (const run_failure& e) {
        if (e.stage() == 0) break;  // stage 1 itself is gone
      }
    }
    return -1;  // unknown: its count went with it
  }

  config::run_config config_;
  optimizer_settings optimizer_;
  int64_t per_epoch_;
  int64_t wave_size_;                                // batches per evaluation wave
  std::shared_ptr<training::trace_recorder> trace_;  // before the actors that record into it
  training::trace_track trace_track_;
  caf_config caf_;
  teardown_step system_gone_{[] { return std::string("after the actor system's shutdown"); }};
  caf::actor_system system_;
  teardown_step system_ends_{[this] {
    return "the actor system's shutdown, with " + std::to_string(system_.registry().running()) +
           " actor(s) still running and " + std::to_string(system_.detached_actors()) + " detached";
  }};
  control_channel control_;
  teardown_step control_ends_{[] { return std::string("closing the trainer's control channel"); }};
  actor_pipeline pipeline_;
  std::size_t stages_;
  int64_t phase_ = 0;
  int64_t drained_proved_at_ = -1;  // the phase after which a migration last proved the pipeline drained
  int64_t late_reported_ = 0;       // late messages of lost nodes already on a fencing line
};

}  // namespace

std::unique_ptr<pipeline_runtime> make_actor_runtime(const config::run_config& c, training_data& data,
                                                     const optimizer_settings& optimizer) {
  check_runtime_supports(c);
  return std::make_unique<actor_runtime>(c, optimizer, data);
}

}  // namespace petra

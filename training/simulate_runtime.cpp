// The simulator's driver: feeds phases from the data, reads each stage's own report.
#include "training/simulate_runtime.hpp"

#include <chrono>

#include "training/forward_gradient.hpp"
#include "training/input_schedule.hpp"
#include "training/json_record.hpp"
#include "training/rebalance.hpp"
#include "training/runtime_support.hpp"
#include "training/setup.hpp"
#include "training/tick_schedule.hpp"

namespace petra {
namespace {

std::vector<stage*> pointers(const std::vector<placed_stage>& placed) {
  std::vector<stage*> out;
  for (const placed_stage& p : placed) out.push_back(p.compute.get());
  return out;
}

class simulate_runtime : public pipeline_runtime {
 public:
  simulate_runtime(const config::run_config& c, data_feed& train, data_feed& test,
                   const optimizer_settings& optimizer)
      : config_(c),
        optimizer_(optimizer),
        train_(train),
        waves_(test),
        spacing_(pipeline_entry_spacing(c, 0)),  // simulate injects no link delays
        stages_(build_placed_stages(c, optimizer)),
        loss_(make_loss_backend()),
        sim_(std::make_unique<simulator>(pointers(stages_), *loss_, spacing_, backward_first(c))),
        every_(c.output.metrics_every_steps),
        meters_(stages_.size()) {
    if (c.training.method == config::training_method::forward_gradient) {
      fg_ = std::make_unique<forward_gradient>(
          pointers(stages_), method_for(c.training).forward_gradient, c.model.num_classes, optimizer,
          c.training.seed, activation_shape{{1, c.model.input[0], c.model.input[1], c.model.input[2]}, {}},
          c.runtime.inversion_sample_every);
      sim_->use_forward_gradient(fg_.get());
    }
  }

  // Forward gradients hold guesses and tangents no cut records yet: their phases end drained; so do
  // the phases of a rebalanced run, whose blocks move where it drains.
  bool takes_cuts() const override { return fg_ == nullptr && !config_.pipeline.rebalance; }

  phase_result train(phase_request phase, const progress_fn& progress, const epoch_fn& on_epoch,
                     const cut_fn& on_cut) override {
    input_schedule schedule(train_, phase.evaluation_waves ? &waves_ : nullptr, spacing_);
    schedule.start(phase.epoch, phase.first, phase.count);
    if (phase.resume) schedule.skip_to(phase.resume->tick);
    const int64_t per_epoch = train_.micro_batches_per_epoch();
    const auto start = std::chrono::steady_clock::now();
    // Each stage's epoch began: at its previous epoch's end, also in an earlier phase (a drained
    // point inside an epoch splits it into phases); the run's first phase starts them.
    if (epoch_since_.size() != stages_.size()) epoch_since_.assign(stages_.size(), start);
    std::vector<std::chrono::steady_clock::time_point>& since = epoch_since_;
    phase_result out;
    epoch_collector epochs(stages_.size(), schedule.wave_size(), [&](epoch_result& e) {
      e.faults.assign(stages_.size(), fault_counts{});
      if (on_epoch) on_epoch(e);
      out.epochs.push_back(e);
    });
    const int64_t wave_size = schedule.wave_size();
    training::loss_ledger ledger;  // the open epochs' and waves' scores (the simulator sums the phase's)
    simulator_hooks hooks;
    hooks.next = [&](int64_t tick, tick_input& in) { return schedule.next(tick, in); };
    hooks.on_done = [&](const run_totals& t) {
      take_windows();
      if (progress) progress(progress_sample{t, windows_});
    };
    hooks.on_loss = [&](int64_t id, double loss, int64_t correct, int64_t samples) {
      if (auto done = ledger.score_train(id, per_epoch, loss, correct, samples))
        epochs.add_loss(done->epoch, done->totals);
    };
    hooks.on_backward = [&](std::size_t j, int64_t id) {
      if (j == 0) stage1_done_ = id;          // what ends a window stage 1 takes now (take_windows)
      if ((id + 1) % per_epoch != 0) return;  // not the last micro-batch of its epoch
      stage& s = *stages_[j].compute;
      stage_report r = report_of(j);
      const auto now = std::chrono::steady_clock::now();
      r.wall_seconds = std::chrono::duration<double>(now - since[j]).count();
      since[j] = now;
      s.reset_stats();
      meters_[j].restart();
      epochs.add_stage(static_cast<int>(id / per_epoch), r);
    };
    hooks.on_eval = [&](const eval_item& item, double loss, int64_t correct) {
      if (auto wave = ledger.score_eval(item.epoch, wave_size, loss, correct,
                                        static_cast<int64_t>(item.labels.size())))
        epochs.add_wave(item.epoch, wave->loss_sum, wave->correct, wave->samples);
    };
    // Cuts: before each chosen micro-batch enters; the epochs still open and the ledger go with the cut.
    std::size_t next_cut = 0;
    hooks.cut_at = [&](int64_t tick) {
      while (next_cut < phase.cut_before.size() && phase.cut_before[next_cut] * spacing_ < tick) ++next_cut;
      return next_cut < phase.cut_before.size() && phase.cut_before[next_cut] * spacing_ == tick;
    };
    hooks.on_cut = [&](pipeline_cut& cut) {
      cut.driver = nlohmann::json{{"epochs", epochs.save()}, {"losses", json_record::write(ledger)}}.dump();
      if (on_cut) on_cut(phase.cut_before[next_cut], cut);
    };
    if (!phase.resume && !open_epochs_.empty()) {  // the epochs a drained phase left open go on here
      const nlohmann::json open = nlohmann::json::parse(open_epochs_);
      epochs.load(open.at("epochs"));
      ledger = json_record::read<training::loss_ledger>(open.at("losses"), "losses");
    }
    if (phase.resume) {
      try {
        const nlohmann::json driver = nlohmann::json::parse(phase.resume->driver);
        epochs.load(driver.at("epochs"));
        ledger = json_record::read<training::loss_ledger>(driver.at("losses"), "losses");
      } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("the snapshot's record of the simulator is damaged: ") +
                                 e.what());
      } catch (const json_record::field_error& e) {
        throw std::runtime_error(std::string("the snapshot's record of the simulator is damaged: ") +
                                 e.what());
      }
    }
    std::vector<double> busy_before;
    for (std::size_t j = 0; j < stages_.size(); ++j) busy_before.push_back(sim_->busy_seconds(j));
    static_cast<run_totals&>(out) = sim_->run(hooks, phase.resume.get());
    out.completed = out.micro_batches - (phase.resume ? phase.resume->completed : 0);  // in this attempt
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (std::size_t j = 0; j < stages_.size(); ++j) {
      stage_report r = report_of(j);
      r.wall_seconds = wall;
      r.phase_busy_seconds = sim_->busy_seconds(j) - busy_before[j];
      out.stages.push_back(r);
    }
    out.faults.assign(stages_.size(), fault_counts{});
    open_epochs_ = nlohmann::json{{"epochs", epochs.save()}, {"losses", json_record::write(ledger)}}.dump();
    return out;
  }

  eval_result evaluate(data_feed& test) override {
    return petra::evaluate(test, [&](const micro_batch& mb) {
      const auto [loss, correct] = sim_->evaluate(mb);
      return eval_score{loss, correct};
    });
  }

  void recalibrate(data_feed& feed, int64_t micro_batches) override {
    petra::calibrate(feed, micro_batches, [&](const micro_batch& mb) { sim_->calibrate(mb); });
  }

  std::vector<stage_snapshot> snapshot() override {
    std::vector<stage_snapshot> out;
    for (placed_stage& p : stages_) out.push_back(snapshot_stage(*p.compute, *p.device));
    if (fg_)  // the auxiliary heads go with their stages
      for (std::size_t j = 0; j < out.size(); ++j) fg_->stage_part(j).save(out[j]);
    return out;
  }

  void restore(const checkpoint& from) override {
    open_epochs_.clear();  // a checkpoint's phase starts with no epoch open (as a new loss actor does)
    epoch_since_.clear();  // and the epochs' clocks start with it
    const std::vector<stage_snapshot> states = stages_for(from, stage_sizes(config_));
    for (std::size_t j = 0; j < stages_.size(); ++j) {
      restore_stage(*stages_[j].compute, *stages_[j].device, states[j]);
      if (fg_) fg_->stage_part(j).restore(from.stages[j]);  // (forward gradients keep their cut)
    }
  }

  // Drained: every stage's state by name, the stages built again on the new cut, each taking its own.
  // The move changes no epoch's record: the open epochs' scores, each stage's clock, and each
  // stage's record, which the stage now at its place goes on from (as the actor runtimes' do).
  void repartition(const std::vector<int>& stage_blocks) override {
    if (fg_) throw std::logic_error("simulate: forward-gradient stages are not repartitioned");
    checkpoint drained;
    drained.stages = snapshot();
    drained.metadata["stage_blocks"] = nlohmann::json(stage_sizes(config_)).dump();
    config_.pipeline.stage_blocks = stage_blocks;
    const std::string open = open_epochs_;
    const auto since = epoch_since_;
    std::vector<stage_stats> records;
    for (const placed_stage& p : stages_) records.push_back(p.compute->stats());
    std::vector<placed_stage> rebuilt = build_placed_stages(config_, optimizer_);
    sim_.reset();  // it points at the stages it drove
    stages_ = std::move(rebuilt);
    sim_ = std::make_unique<simulator>(pointers(stages_), *loss_, spacing_, backward_first(config_));
    restore(drained);
    open_epochs_ = open;
    epoch_since_ = since;
    meters_.assign(stages_.size(), stage_window_meter{});
    for (std::size_t j = 0; j < stages_.size(); ++j) {
      stages_[j].compute->continue_stats(records[j]);
      meters_[j].take(*stages_[j].compute);  // the next window holds the new stage's steps only
    }
  }

  double first_stage_lr(int64_t steps) override {
    return learning_rate(stages_.front().compute->optimizer().settings(), steps);
  }

  void write_trace(const std::string&) override {
    throw std::logic_error(
        "the simulator records no timeline (output.trace is refused for runtime.mode simulate)");
  }

  void recover() override {}  // one thread, nothing to lose: the checkpoint restores everything

 private:
  /// Stage j's report now, with forward gradients' cosine diagnostic since the last one.
  stage_report report_of(std::size_t j) {
    stage_report r = stage_report::of(*stages_[j].compute);
    if (fg_) {
      const gradient_cosine c = fg_->take_cosine(j);
      r.gradient_cosine_samples = c.samples;
      r.gradient_cosine_sum = c.sum;
      r.gradient_cosine_min = c.min;
    }
    return r;
  }

  /// Per-step metrics: every stage's window, each time stage 1 completes another N optimizer steps.
  void take_windows() {
    const int64_t steps = stages_.front().compute->weight_version();
    if (every_ <= 0 || steps == windows_taken_at_ || steps % every_ != 0) return;
    windows_taken_at_ = steps;
    windows_.clear();
    for (std::size_t j = 0; j < stages_.size(); ++j) windows_.push_back(meters_[j].take(*stages_[j].compute));
    windows_.front().ended_by = stage1_done_;
  }

  config::run_config config_;  // its pipeline.stage_blocks follows the moves of rebalancing
  optimizer_settings optimizer_;
  data_feed& train_;
  data_feed& waves_;  // the test set in training-sized micro-batches, for evaluation waves
  int64_t spacing_;
  int64_t stage1_done_ = -1;  // the id of the micro-batch stage 1 last finished
  std::vector<placed_stage> stages_;
  std::unique_ptr<backend> loss_;
  std::unique_ptr<simulator> sim_;
  std::unique_ptr<forward_gradient> fg_;  // training.method forward_gradient
  int64_t every_;
  std::vector<stage_window_meter> meters_;
  std::vector<stage_window> windows_;
  int64_t windows_taken_at_ = -1;
  // The epochs and scores a phase that drained inside an epoch left open (what the actor runtimes'
  // loss actor keeps between phases), as in a cut's record; empty after a restore.
  std::string open_epochs_;
  std::vector<std::chrono::steady_clock::time_point> epoch_since_;  // per stage, when its epoch began
};

}  // namespace

std::unique_ptr<pipeline_runtime> make_simulate_runtime(const config::run_config& c, training_data& data,
                                                        const optimizer_settings& optimizer) {
  check_runtime_supports(c);
  return std::make_unique<simulate_runtime>(c, *data.train_feed, *data.wave_feed, optimizer);
}

}  // namespace petra

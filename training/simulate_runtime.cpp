// The simulator's driver: feeds phases from the data, reads each stage's own report.
#include "training/simulate_runtime.hpp"

#include <chrono>

#include "training/runtime_support.hpp"
#include "training/setup.hpp"

namespace petra {
namespace {

std::vector<stage*> pointers(const std::vector<placed_stage>& placed) {
  std::vector<stage*> out;
  for (const placed_stage& p : placed) out.push_back(p.compute.get());
  return out;
}

class simulate_runtime : public pipeline_runtime {
 public:
  simulate_runtime(const config::run_config& c, data_feed& train, const optimizer_settings& optimizer)
      : train_(train),
        stages_(build_placed_stages(c, optimizer)),
        loss_(make_loss_backend()),
        sim_(pointers(stages_), *loss_, entry_spacing(method_for(c.training).kind, stages_.size())),
        every_(c.output.metrics_every_steps),
        meters_(stages_.size()) {}

  phase_result train(const phase_request& phase, const progress_fn& progress) override {
    train_.start_epoch(phase.epoch, phase.first);
    for (placed_stage& p : stages_) p.compute->reset_stats();
    for (stage_window_meter& m : meters_) m.restart();
    const auto start = std::chrono::steady_clock::now();
    int64_t fed = 0;
    phase_result out;
    static_cast<run_totals&>(out) = sim_.run(
        [&](micro_batch& mb) {
          if (fed >= phase.count || !train_.next(mb)) return false;
          ++fed;
          return true;
        },
        [&](const run_totals& t) {
          take_windows();
          if (progress) progress(progress_sample{t, windows_});
        });
    out.completed = out.micro_batches;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (placed_stage& p : stages_) {
      stage_report r = stage_report::of(*p.compute);
      r.wall_seconds = wall;
      out.stages.push_back(r);
    }
    out.faults.assign(stages_.size(), fault_counts{});
    return out;
  }

  eval_result evaluate(data_feed& test) override {
    return petra::evaluate(test, [&](const micro_batch& mb) {
      const auto [loss, correct] = sim_.evaluate(mb);
      return eval_score{loss, correct};
    });
  }

  std::vector<stage_snapshot> snapshot() override {
    std::vector<stage_snapshot> out;
    for (placed_stage& p : stages_) out.push_back(snapshot_stage(*p.compute, *p.device));
    return out;
  }

  void restore(const checkpoint& from) override {
    for (std::size_t j = 0; j < stages_.size(); ++j)
      restore_stage(*stages_[j].compute, *stages_[j].device, from.stages[j]);
  }

  double current_lr() override { return stages_.front().compute->optimizer().current_lr(); }

  void write_trace(const std::string&) override {
    throw std::logic_error(
        "the simulator records no timeline (output.trace is refused for runtime.mode simulate)");
  }

  void recover() override {}  // one thread, nothing to lose: the checkpoint restores everything

 private:
  /// Per-step metrics: every stage's window, each time stage 1 completes another N optimizer steps.
  void take_windows() {
    const int64_t steps = stages_.front().compute->weight_version();
    if (every_ <= 0 || steps == windows_taken_at_ || steps % every_ != 0) return;
    windows_taken_at_ = steps;
    windows_.clear();
    for (std::size_t j = 0; j < stages_.size(); ++j) windows_.push_back(meters_[j].take(*stages_[j].compute));
  }

  data_feed& train_;
  std::vector<placed_stage> stages_;
  std::unique_ptr<backend> loss_;
  simulator sim_;
  int64_t every_;
  std::vector<stage_window_meter> meters_;
  std::vector<stage_window> windows_;
  int64_t windows_taken_at_ = -1;
};

}  // namespace

std::unique_ptr<pipeline_runtime> make_simulate_runtime(const config::run_config& c, data_feed& train,
                                                        const optimizer_settings& optimizer) {
  check_runtime_supports(c);
  return std::make_unique<simulate_runtime>(c, train, optimizer);
}

}  // namespace petra

// The reference simulator behind the trainer interface.
#include "app/simulate_trainer.hpp"

#include "actors/setup.hpp"
#include "actors/stage_report_json.hpp"
#include "app/checkpoint.hpp"
#include "compute/pipeline/simulator.hpp"

namespace petra::app {
namespace {

class simulate_trainer : public trainer {
 public:
  simulate_trainer(const config::run_config& c, training_data& data, const optimizer_settings& optimizer)
      : data_(data),
        optimizer_(optimizer),
        device_(make_cpu_backend(c.runtime.threads)),
        stages_(build_stages(c, *device_, optimizer)),
        sim_(stages_, *device_, method_for(c.training)) {}

  phase_totals train(int epoch, int64_t first, int64_t count, const progress_fn& progress, int) override {
    data_.train_feed->start_epoch(epoch, first);
    sim_.reset_timings();
    int64_t fed = 0;
    phase_totals live;
    const run_totals totals = sim_.run(
        [&](micro_batch& mb) { return fed++ < count && data_.train_feed->next(mb); },
        [&](const run_totals& t) {
          static_cast<run_totals&>(live) = t;
          if (progress) progress(live);
        });
    phase_totals out;
    static_cast<run_totals&>(out) = totals;
    for (std::size_t j = 0; j < stages_.size(); ++j) out.stages.push_back(to_json(report(j), stages_.size()));
    return out;
  }

  eval_result evaluate(data_feed& test) override { return petra::evaluate(sim_, test); }

  void save_checkpoint(const std::string& path, std::map<std::string, std::string> metadata) override {
    app::save_checkpoint(path, stages_, *device_, std::move(metadata));
  }

  std::map<std::string, std::string> load_checkpoint(const std::string& path) override {
    return app::load_checkpoint(path, stages_, *device_);
  }

  double current_lr() override { return stages_.front()->optimizer().current_lr(); }

  void recover() override {}  // one thread, nothing to lose: the checkpoint restores everything

 private:
  messages::stage_report report(std::size_t j) {
    const stage_stats& st = stages_[j]->stats();
    messages::stage_report r;
    r.stage = static_cast<int32_t>(j);
    r.forwards = st.forwards, r.backwards = st.backwards;
    r.weight_version = stages_[j]->weight_version();
    for (auto& kv : sim_.timings()[j].delay_ticks) r.delay_ticks.push_back({kv.first, kv.second});
    for (auto& kv : sim_.timings()[j].staleness) r.staleness_steps.push_back({kv.first, kv.second});
    r.fifo_peak = static_cast<int64_t>(st.fifo_peak), r.fifo_peak_bytes = static_cast<int64_t>(st.fifo_peak_bytes);
    r.stash_peak = static_cast<int64_t>(st.stash_peak), r.stash_peak_bytes = static_cast<int64_t>(st.stash_peak_bytes);
    r.inversion_samples = st.inversion_samples;
    r.inversion_error_sum = st.inversion_error_sum, r.inversion_error_max = st.inversion_error_max;
    return r;
  }

  training_data& data_;
  optimizer_settings optimizer_;
  std::unique_ptr<backend> device_;
  std::vector<std::unique_ptr<stage>> stages_;
  simulator sim_;
};

}  // namespace

std::unique_ptr<trainer> make_simulate_trainer(const config::run_config& c, training_data& data,
                                               const optimizer_settings& optimizer) {
  return std::make_unique<simulate_trainer>(c, data, optimizer);
}

}  // namespace petra::app

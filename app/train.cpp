// `petra train`: runs a config with the reference simulator, epoch by epoch: train,
// evaluate, log metrics, checkpoint. Every input is checked before anything is written.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/checkpoint.hpp"
#include "app/commands.hpp"
#include "app/data_feed.hpp"
#include "app/progress.hpp"
#include "app/run_dir.hpp"
#include "app/setup.hpp"
#include "app/training_data.hpp"
#include "compute/pipeline/simulator.hpp"
#include "compute/serialize/atomic_file.hpp"

namespace petra::app {
namespace {

nlohmann::json stage_report(std::vector<std::unique_ptr<stage>>& stages, const simulator& sim) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t j = 0; j < stages.size(); ++j) {
    const stage_stats& st = stages[j]->stats();
    nlohmann::json delay = nlohmann::json::object(), stale = nlohmann::json::object();
    for (auto& kv : sim.timings()[j].delay_ticks) delay[std::to_string(kv.first)] = kv.second;
    for (auto& kv : sim.timings()[j].staleness) stale[std::to_string(kv.first)] = kv.second;
    nlohmann::json s = {{"stage", j + 1},
                        {"reversible", stages[j]->reversible()},
                        {"delay_ticks", delay},
                        {"staleness_steps", stale},
                        {"fifo_peak", st.fifo_peak},
                        {"fifo_peak_bytes", st.fifo_peak_bytes},
                        {"stash_peak_versions", st.stash_peak},
                        {"stash_peak_bytes", st.stash_peak_bytes},
                        {"parameter_bytes", stages[j]->parameter_bytes()},
                        {"optimizer_state_bytes", stages[j]->optimizer_state_bytes()},
                        {"buffer_bytes", stages[j]->buffer_bytes()}};
    if (st.inversion_samples) {
      s["inversion_error_mean"] = st.inversion_error_sum / static_cast<double>(st.inversion_samples);
      s["inversion_error_max"] = st.inversion_error_max;
      s["inversion_samples"] = st.inversion_samples;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

int train_command(const train_options& options) {
  // 1. Everything that can be wrong with the input, before any file is written.
  config::run_config cfg;
  training_data data;
  std::unique_ptr<backend> be;
  std::vector<std::unique_ptr<stage>> stages;
  optimizer_settings opt;
  method_options method;
  try {
    cfg = config::load_config(options.config, options.sets);
    data = load_training_data(cfg);
    be = make_cpu_backend(cfg.runtime.threads);
    const int64_t steps_per_epoch = data.train_feed->micro_batches_per_epoch() / cfg.training.accumulation;
    if (steps_per_epoch < 1)
      throw std::invalid_argument("the training set (" + std::to_string(data.train->count) +
                                  " images) is smaller than one optimizer batch (micro_batch · accumulation = " +
                                  std::to_string(cfg.training.micro_batch * cfg.training.accumulation) + ")");
    opt = optimizer_for(cfg.training, steps_per_epoch);
    method = method_for(cfg.training);
    stages = build_stages(cfg, *be, opt);
  } catch (const std::exception& e) {
    std::cerr << "petra train: " << e.what() << "\n";
    return 2;
  }

  // 2. The run.
  try {
    run_dir run(cfg.output.dir, cfg.output.name.empty() ? default_run_name(cfg.model.arch, method.str()) : cfg.output.name);
    write_file_atomically(run.file("config.yaml"), [&](std::ostream& out) { out << config::to_yaml(cfg); });
    std::printf("petra train: %s, %s, J = %zu stages, %lld micro-batches of %d per epoch, k = %d, lr %.4g -> %s\n",
                cfg.model.arch.c_str(), method.str().c_str(), stages.size(),
                static_cast<long long>(data.train_feed->micro_batches_per_epoch()), cfg.training.micro_batch,
                cfg.training.accumulation, opt.lr, run.path().c_str());
    std::fflush(stdout);

    simulator sim(stages, *be, method);
    progress bar(cfg.output.progress);
    const auto run_start = std::chrono::steady_clock::now();
    double train_seconds = 0;
    int64_t train_images = 0;
    double last_test_acc = 0;
    for (int epoch = 1; epoch <= cfg.training.epochs; ++epoch) {
      data.train_feed->start_epoch(epoch);
      bar.start_epoch(epoch, cfg.training.epochs, data.train_feed->micro_batches_per_epoch());
      const auto t0 = std::chrono::steady_clock::now();
      const run_totals totals = sim.run(
          [&](micro_batch& mb) { return data.train_feed->next(*be, mb); },
          [&](const run_totals& t) { bar.update(t.micro_batches, t.samples, t.mean_loss(), t.accuracy()); });
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      bar.end_epoch();
      train_seconds += seconds;
      train_images += totals.samples;

      const eval_result test = evaluate(sim, *data.test_feed, *be);
      last_test_acc = test.accuracy;
      const double images_per_s = totals.samples / seconds;
      run.log({{"event", "epoch"},
               {"epoch", epoch},
               {"train_loss", totals.mean_loss()},
               {"train_accuracy", totals.accuracy()},
               {"test_loss", test.loss},
               {"test_accuracy", test.accuracy},
               {"images_per_s", images_per_s},
               {"epoch_seconds", seconds},
               {"ticks", totals.ticks},
               {"lr", stages.front()->optimizer().current_lr()},
               {"stages", stage_report(stages, sim)}});
      save_checkpoint(run.file("checkpoint.safetensors"), stages, *be,
                      {{"epoch", std::to_string(epoch)}, {"method", method.str()}, {"config", config::to_yaml(cfg)}});
      std::printf("epoch %d/%d  train loss %.4f acc %.2f%%  test loss %.4f acc %.2f%%  %.0f img/s  %.1f s\n", epoch,
                  cfg.training.epochs, totals.mean_loss(), 100 * totals.accuracy(), test.loss, 100 * test.accuracy,
                  images_per_s, seconds);
      std::fflush(stdout);
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    run.log({{"event", "summary"},
             {"test_accuracy", last_test_acc},
             {"wall_seconds", wall},
             {"train_seconds", train_seconds},
             {"images_per_s", train_images / train_seconds}});
    std::printf("done: test accuracy %.2f%%, wall %.1f s, %.0f img/s training -> %s\n", 100 * last_test_acc, wall,
                train_images / train_seconds, run.path().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "\npetra train: failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace petra::app

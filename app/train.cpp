// `petra train`: runs a config epoch by epoch, whatever the runtime (simulate, lockstep, async):
// train (in phases that end drained), evaluate, log metrics, checkpoint. Every input is checked
// before anything is written; `--resume` continues a run directory from its checkpoint.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "actors/setup.hpp"
#include "app/commands.hpp"
#include "app/progress.hpp"
#include "app/run_dir.hpp"
#include "app/simulate_trainer.hpp"
#include "compute/serialize/atomic_file.hpp"

namespace petra::app {
namespace {

struct resume_point {
  int epoch = 1;          // the epoch to continue
  int64_t position = 0;   // its next micro-batch
};

/// What happened to the micro-batches and the faults over the run (the summary's accounting).
struct accounting {
  int64_t completed = 0;             // micro-batches whose phase finished
  int64_t replayed = 0;              // micro-batches of phases rolled back and run again
  int64_t restarts = 0;
  int64_t duplicates_discarded = 0;
  int64_t injected = 0;              // faults injected (drops, duplicates, reorders, delays, crashes)
  double recovery_seconds = 0;       // from a failure report to the pipeline ready again

  void add_events(const nlohmann::json& stages) {
    for (const auto& s : stages) {
      duplicates_discarded += s.value("duplicates_discarded", int64_t{0});
      for (const char* k : {"injected_drops", "injected_duplicates", "injected_reorders", "injected_delays",
                            "injected_crashes"})
        injected += s.value(k, int64_t{0});
    }
  }
  nlohmann::json json() const {
    return {{"completed", completed},   {"replayed", replayed}, {"restarts", restarts},
            {"duplicates_discarded", duplicates_discarded}, {"faults_injected", injected},
            {"recovery_seconds", recovery_seconds}};
  }
};

phase_totals& operator+=(phase_totals& a, const phase_totals& b) {
  a.micro_batches += b.micro_batches, a.samples += b.samples, a.correct += b.correct;
  a.loss_sum += b.loss_sum, a.ticks += b.ticks;
  a.stages = b.stages;
  return a;
}

std::unique_ptr<trainer> make_trainer(const config::run_config& cfg, training_data& data,
                                      const optimizer_settings& opt) {
  if (cfg.runtime.mode == "simulate") return make_simulate_trainer(cfg, data, opt);
  return make_actor_trainer(cfg, data, opt);
}

}  // namespace

int train_command(const train_options& options) {
  namespace fs = std::filesystem;
  // 1. Everything that can be wrong with the input, before any file is written.
  config::run_config cfg;
  training_data data;
  optimizer_settings opt;
  method_options method;
  std::unique_ptr<trainer> runner;
  resume_point start;
  int64_t per_epoch = 0;
  try {
    if (!options.resume.empty()) {
      if (!fs::exists(fs::path(options.resume) / "config.yaml") || !fs::exists(fs::path(options.resume) / "checkpoint.safetensors"))
        throw std::invalid_argument("'" + options.resume + "' is not a run directory with config.yaml and checkpoint.safetensors");
      cfg = config::load_config((fs::path(options.resume) / "config.yaml").string(), options.sets);
    } else {
      cfg = config::load_config(options.config, options.sets);
    }
    data = load_training_data(cfg);
    per_epoch = data.train_feed->micro_batches_per_epoch();
    const int64_t steps_per_epoch = per_epoch / cfg.training.accumulation;
    if (steps_per_epoch < 1)
      throw std::invalid_argument("the training set (" + std::to_string(data.train->count) +
                                  " images) is smaller than one optimizer batch (micro_batch · accumulation = " +
                                  std::to_string(cfg.training.micro_batch * cfg.training.accumulation) + ")");
    opt = optimizer_for(cfg.training, steps_per_epoch);
    method = method_for(cfg.training);
    runner = make_trainer(cfg, data, opt);
    if (!options.resume.empty()) {
      const auto meta = runner->load_checkpoint((fs::path(options.resume) / "checkpoint.safetensors").string());
      start.epoch = std::stoi(meta.at("epoch"));
      start.position = std::stoll(meta.at("position"));
      if (start.position >= per_epoch) start.epoch += 1, start.position = 0;
      if (start.epoch > cfg.training.epochs) throw std::invalid_argument("the run in '" + options.resume + "' is already complete");
    }
  } catch (const std::exception& e) {
    std::cerr << "petra train: " << e.what() << "\n";
    return 2;
  }

  // 2. The run.
  try {
    run_dir run = options.resume.empty()
                      ? run_dir(cfg.output.dir, cfg.output.name.empty() ? default_run_name(cfg.model.arch, method.str())
                                                                        : cfg.output.name)
                      : run_dir::reopen(options.resume);
    if (options.resume.empty())
      write_file_atomically(run.file("config.yaml"), [&](std::ostream& out) { out << config::to_yaml(cfg); });
    std::printf("petra train: %s, %s, runtime %s, J = %zu stages, %lld micro-batches of %d per epoch, k = %d, lr %.4g%s -> %s\n",
                cfg.model.arch.c_str(), method.str().c_str(), cfg.runtime.mode.c_str(), stage_sizes(cfg).size(),
                static_cast<long long>(per_epoch), cfg.training.micro_batch, cfg.training.accumulation, opt.lr,
                options.resume.empty() ? "" : (" (resuming epoch " + std::to_string(start.epoch) + " at micro-batch " +
                                               std::to_string(start.position) + ")").c_str(),
                run.path().c_str());
    std::fflush(stdout);

    const int64_t phase_size = cfg.output.checkpoint_every_steps > 0
                                   ? static_cast<int64_t>(cfg.output.checkpoint_every_steps) * cfg.training.accumulation
                                   : per_epoch;
    progress bar(cfg.output.progress);
    const auto run_start = std::chrono::steady_clock::now();
    double train_seconds = 0;
    int64_t train_images = 0;
    double last_test_acc = 0;
    auto checkpoint = [&](int epoch, int64_t position) {
      runner->save_checkpoint(run.file("checkpoint.safetensors"),
                              {{"epoch", std::to_string(epoch)}, {"position", std::to_string(position)},
                               {"method", method.str()}, {"config", config::to_yaml(cfg)}});
    };
    accounting account;
    // The first rollback target: a failure in the first phase restores this.
    if (options.resume.empty()) checkpoint(start.epoch, start.position);
    // One phase, replayed from the last checkpoint after each failure, up to faults.max_restarts.
    auto run_phase = [&](int epoch, int64_t position, int64_t count, const progress_fn& progress) {
      for (int attempt = 0;; ++attempt) {
        try {
          phase_totals totals = runner->train(epoch, position, count, progress, attempt);
          account.completed += count;
          account.add_events(totals.stages);
          return totals;
        } catch (const run_error& e) {
          if (attempt >= cfg.faults.max_restarts) throw;
          const auto t0 = std::chrono::steady_clock::now();
          std::printf("\n%s; rolling back to the checkpoint at epoch %d, micro-batch %lld and replaying %lld micro-batches\n",
                      e.what(), epoch, static_cast<long long>(position), static_cast<long long>(count));
          std::fflush(stdout);
          runner->recover();
          runner->load_checkpoint(run.file("checkpoint.safetensors"));
          const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          account.replayed += count;
          account.restarts += 1;
          if (std::string(e.what()).find("injected") != std::string::npos) account.injected += 1;
          account.recovery_seconds += seconds;
          run.log({{"event", "failure"}, {"epoch", epoch}, {"position", position}, {"stage", e.stage() + 1},
                   {"tick", e.tick()}, {"what", e.what()}, {"attempt", attempt}, {"recovery_seconds", seconds},
                   {"replayed_micro_batches", count}});
        }
      }
    };
    for (int epoch = start.epoch; epoch <= cfg.training.epochs; ++epoch) {
      int64_t position = epoch == start.epoch ? start.position : 0;
      bar.start_epoch(epoch, cfg.training.epochs, per_epoch - position);
      phase_totals epoch_totals;
      double seconds = 0;
      while (position < per_epoch) {
        const int64_t count = std::min(phase_size, per_epoch - position);
        const phase_totals before = epoch_totals;
        const auto t0 = std::chrono::steady_clock::now();
        const phase_totals totals = run_phase(epoch, position, count, [&](const phase_totals& t) {
          bar.update(before.micro_batches + t.micro_batches, before.samples + t.samples,
                     (before.loss_sum + t.loss_sum) / std::max<int64_t>(1, before.micro_batches + t.micro_batches),
                     static_cast<double>(before.correct + t.correct) / std::max<int64_t>(1, before.samples + t.samples));
        });
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        epoch_totals += totals;
        position += count;
        if (position < per_epoch) checkpoint(epoch, position);
      }
      bar.end_epoch();
      train_seconds += seconds;
      train_images += epoch_totals.samples;

      const eval_result test = runner->evaluate(*data.test_feed);
      last_test_acc = test.accuracy;
      const double images_per_s = epoch_totals.samples / seconds;
      run.log({{"event", "epoch"},
               {"epoch", epoch},
               {"runtime", cfg.runtime.mode},
               {"train_loss", epoch_totals.mean_loss()},
               {"train_accuracy", epoch_totals.accuracy()},
               {"test_loss", test.loss},
               {"test_accuracy", test.accuracy},
               {"images_per_s", images_per_s},
               {"epoch_seconds", seconds},
               {"ticks", epoch_totals.ticks},
               {"lr", runner->current_lr()},
               {"stages", epoch_totals.stages}});
      checkpoint(epoch, per_epoch);
      std::printf("epoch %d/%d  train loss %.4f acc %.2f%%  test loss %.4f acc %.2f%%  %.0f img/s  %.1f s\n", epoch,
                  cfg.training.epochs, epoch_totals.mean_loss(), 100 * epoch_totals.accuracy(), test.loss,
                  100 * test.accuracy, images_per_s, seconds);
      std::fflush(stdout);
      if (options.stop_after_epoch > 0 && epoch >= options.stop_after_epoch && epoch < cfg.training.epochs) {
        std::printf("stopped after epoch %d as asked; continue with: petra train --resume %s\n", epoch,
                    run.path().c_str());
        return 0;
      }
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    run.log({{"event", "summary"},
             {"test_accuracy", last_test_acc},
             {"micro_batches", account.json()},
             {"wall_seconds", wall},
             {"train_seconds", train_seconds},
             {"images_per_s", train_seconds > 0 ? train_images / train_seconds : 0.0}});
    std::printf("done: test accuracy %.2f%%, wall %.1f s, %.0f img/s training -> %s\n", 100 * last_test_acc, wall,
                train_seconds > 0 ? train_images / train_seconds : 0.0, run.path().c_str());
    if (account.restarts || account.injected || account.duplicates_discarded)
      std::printf("micro-batches: %lld completed, %lld replayed after %lld rollbacks (%.2f s recovering); "
                  "%lld faults injected, %lld duplicates discarded\n",
                  static_cast<long long>(account.completed), static_cast<long long>(account.replayed),
                  static_cast<long long>(account.restarts), account.recovery_seconds,
                  static_cast<long long>(account.injected), static_cast<long long>(account.duplicates_discarded));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "\npetra train: failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace petra::app

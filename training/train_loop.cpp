// The trainer loop. Every input is checked before anything is written; a failed phase rolls back
// to the last checkpoint and is replayed, up to faults.max_restarts.
#include "training/train_loop.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "compute/serialize/atomic_file.hpp"
#include "training/accounting.hpp"
#include "training/progress.hpp"
#include "training/run_dir.hpp"
#include "training/runtime_support.hpp"
#include "training/setup.hpp"
#include "training/stage_metrics.hpp"

namespace petra {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Everything the run needs, checked: the config, the data, the runtime, where to start.
struct prepared_run {
  config::run_config cfg;
  training_data data;
  optimizer_settings opt;
  method_options method;
  std::unique_ptr<pipeline_runtime> runtime;
  std::string run_path;   // the run directory (to create, or to reopen when resuming)
  int epoch = 1;          // the epoch to start or continue
  int64_t position = 0;   // its next micro-batch
  int64_t per_epoch = 0;  // micro-batches per epoch
};

prepared_run prepare(const train_options& options, const runtime_factory& make_runtime) {
  prepared_run p;
  const bool resuming = !options.resume.empty();
  const fs::path resume_dir(options.resume);
  if (resuming &&
      (!fs::exists(resume_dir / "config.yaml") || !fs::exists(resume_dir / "checkpoint.safetensors")))
    throw std::invalid_argument("'" + options.resume +
                                "' is not a run directory with config.yaml and checkpoint.safetensors");
  p.cfg =
      config::load_config(resuming ? (resume_dir / "config.yaml").string() : options.config, options.sets);
  check_runtime_supports(p.cfg);
  p.method = method_for(p.cfg.training);
  p.run_path = resuming ? options.resume
                        : (fs::path(p.cfg.output.dir) /
                           (p.cfg.output.name.empty() ? default_run_name(p.cfg.model.arch, p.method.str())
                                                      : p.cfg.output.name))
                              .string();
  if (!resuming && fs::exists(p.run_path) && !fs::is_empty(p.run_path))
    throw std::invalid_argument("run directory '" + p.run_path +
                                "' already exists and is not empty: choose another output.name or remove it");
  p.data = load_training_data(p.cfg);
  p.per_epoch = p.data.train_feed->micro_batches_per_epoch();
  const int64_t steps_per_epoch = p.per_epoch / p.cfg.training.accumulation;
  if (steps_per_epoch < 1)
    throw std::invalid_argument(
        "the training set (" + std::to_string(p.data.train->count()) +
        " images) is smaller than one optimizer batch (micro_batch · accumulation = " +
        std::to_string(p.cfg.training.micro_batch * p.cfg.training.accumulation) + ")");
  p.opt = optimizer_for(p.cfg.training, steps_per_epoch);
  p.runtime = make_runtime(p.cfg, p.data, p.opt);
  if (resuming) {
    const checkpoint from =
        read_checkpoint((resume_dir / "checkpoint.safetensors").string(), stage_sizes(p.cfg).size());
    p.runtime->restore(from);
    p.epoch = std::stoi(from.metadata.at("epoch"));
    p.position = std::stoll(from.metadata.at("position"));
    if (p.position >= p.per_epoch) p.epoch += 1, p.position = 0;
    if (p.epoch > p.cfg.training.epochs)
      throw std::invalid_argument("the run in '" + options.resume + "' is already complete");
  }
  return p;
}

/// One epoch's totals over its phases.
struct epoch_totals : run_totals {
  std::vector<stage_report> stages;
  std::vector<fault_counts> faults;
  void add(const phase_result& phase) {
    static_cast<run_totals&>(*this) += phase;
    if (stages.empty()) {
      stages = phase.stages;
      faults = phase.faults;
      return;
    }
    for (std::size_t j = 0; j < stages.size(); ++j) {
      merge(stages[j], phase.stages[j]);
      faults[j] += phase.faults[j];
    }
  }
};

class run {
 public:
  run(prepared_run& p, const train_options& options, run_dir& dir)
      : p_(p), options_(options), dir_(dir), bar_(p.cfg.output.progress), J_(stage_sizes(p.cfg).size()) {}

  int go() {
    const auto run_start = clock_type::now();
    if (options_.resume.empty()) checkpoint_at(p_.epoch, p_.position);  // the first rollback target
    for (int epoch = p_.epoch; epoch <= p_.cfg.training.epochs; ++epoch) {
      train_epoch(epoch, epoch == p_.epoch ? p_.position : 0);
      if (options_.stop_after_epoch > 0 && epoch >= options_.stop_after_epoch &&
          epoch < p_.cfg.training.epochs) {
        std::printf("stopped after epoch %d as asked; continue with: petra train --resume %s\n", epoch,
                    dir_.path().c_str());
        return 0;
      }
    }
    summarize(seconds_since(run_start));
    return 0;
  }

 private:
  void checkpoint_at(int epoch, int64_t position) {
    write_checkpoint(dir_.file("checkpoint.safetensors"), p_.runtime->snapshot(),
                     {{"epoch", std::to_string(epoch)},
                      {"position", std::to_string(position)},
                      {"method", p_.method.str()},
                      {"config", config::to_yaml(p_.cfg)}});
  }

  /// One phase, replayed from the last checkpoint after each failure, up to faults.max_restarts.
  phase_result run_phase(const phase_request& request, const progress_fn& progress) {
    for (phase_request attempt = request;; ++attempt.attempt) {
      try {
        phase_result result = p_.runtime->train(attempt, progress);
        account_.add_phase(result.completed, result.faults);
        return result;
      } catch (const run_failure& e) {
        if (attempt.attempt >= p_.cfg.faults.max_restarts) throw;
        const auto t0 = clock_type::now();
        std::printf(
            "\n%s; rolling back to the checkpoint at epoch %d, micro-batch %lld and replaying %lld "
            "micro-batches\n",
            e.what(), request.epoch, static_cast<long long>(request.first),
            static_cast<long long>(request.count));
        std::fflush(stdout);
        p_.runtime->recover();
        p_.runtime->restore(read_checkpoint(dir_.file("checkpoint.safetensors"), J_));
        const double seconds = seconds_since(t0);
        account_.add_failure(e, request.count, seconds);
        dir_.log({{"event", "failure"},
                  {"epoch", request.epoch},
                  {"position", request.first},
                  {"kind", to_string(e.kind())},
                  {"stage", e.stage() >= 0 ? nlohmann::json(e.stage() + 1) : nlohmann::json()},
                  {"tick", e.tick()},
                  {"what", e.what()},
                  {"attempt", attempt.attempt},
                  {"completed_before_failure", e.completed},
                  {"faults_injected", total(e.faults).injected()},
                  {"duplicates_discarded", total(e.faults).duplicates_discarded},
                  {"recovery_seconds", seconds},
                  {"replayed_micro_batches", request.count}});
      }
    }
  }

  void train_epoch(int epoch, int64_t position) {
    const config::run_config& cfg = p_.cfg;
    const int64_t phase_size =
        cfg.output.checkpoint_every_steps > 0
            ? static_cast<int64_t>(cfg.output.checkpoint_every_steps) * cfg.training.accumulation
            : p_.per_epoch;
    bar_.start_epoch(epoch, cfg.training.epochs, p_.per_epoch - position);
    const double waited_before = p_.data.train_feed->waited_seconds();
    epoch_totals totals;
    double seconds = 0;
    while (position < p_.per_epoch) {
      const int64_t count = std::min(phase_size, p_.per_epoch - position);
      const run_totals before = totals;
      const auto t0 = clock_type::now();
      const phase_result phase = run_phase({epoch, position, count, 0}, [&](const run_totals& t) {
        run_totals now = before;
        now += t;
        bar_.update(now.micro_batches, now.samples, now.mean_loss(), now.accuracy());
      });
      seconds += seconds_since(t0);
      totals.add(phase);
      position += count;
      if (position < p_.per_epoch) checkpoint_at(epoch, position);
    }
    bar_.end_epoch();
    train_seconds_ += seconds;
    train_images_ += totals.samples;

    const eval_result test = p_.runtime->evaluate(*p_.data.test_feed);
    last_test_accuracy_ = test.accuracy;
    nlohmann::json stages = nlohmann::json::array();
    for (std::size_t j = 0; j < totals.stages.size(); ++j)
      stages.push_back(stage_json(totals.stages[j], totals.faults[j], cfg, J_));
    const double images_per_s = totals.samples / seconds;
    for (const data::bad_image& bad : p_.data.new_bad_images())
      dir_.log({{"event", "bad_image"}, {"path", bad.path}, {"reason", bad.reason}});
    dir_.log({{"event", "epoch"},
              {"epoch", epoch},
              {"runtime", config::to_string(cfg.runtime.mode)},
              {"train_loss", totals.mean_loss()},
              {"train_accuracy", totals.accuracy()},
              {"test_loss", test.loss},
              {"test_accuracy", test.accuracy},
              {"images_per_s", images_per_s},
              {"epoch_seconds", seconds},
              {"ticks", totals.ticks},
              {"lr", p_.runtime->current_lr()},
              {"loader_wait_seconds", p_.data.train_feed->waited_seconds() - waited_before},
              {"bad_images", p_.data.bad_image_count()},
              {"stages", stages}});
    checkpoint_at(epoch, p_.per_epoch);
    std::printf("epoch %d/%d  train loss %.4f acc %.2f%%  test loss %.4f acc %.2f%%  %.0f img/s  %.1f s\n",
                epoch, cfg.training.epochs, totals.mean_loss(), 100 * totals.accuracy(), test.loss,
                100 * test.accuracy, images_per_s, seconds);
    std::fflush(stdout);
  }

  void summarize(double wall) {
    const double images_per_s = train_seconds_ > 0 ? train_images_ / train_seconds_ : 0.0;
    dir_.log({{"event", "summary"},
              {"test_accuracy", last_test_accuracy_},
              {"micro_batches", account_.json()},
              {"wall_seconds", wall},
              {"train_seconds", train_seconds_},
              {"images_per_s", images_per_s}});
    std::printf("done: test accuracy %.2f%%, wall %.1f s, %.0f img/s training -> %s\n",
                100 * last_test_accuracy_, wall, images_per_s, dir_.path().c_str());
    if (account_.restarts || account_.faults_injected || account_.duplicates_discarded)
      std::printf(
          "micro-batches: %lld completed, %lld replayed after %lld rollbacks (%lld undone, %.2f s "
          "recovering); "
          "%lld faults injected, %lld duplicates discarded\n",
          static_cast<long long>(account_.completed), static_cast<long long>(account_.replayed),
          static_cast<long long>(account_.restarts), static_cast<long long>(account_.rolled_back),
          account_.recovery_seconds, static_cast<long long>(account_.faults_injected),
          static_cast<long long>(account_.duplicates_discarded));
  }

  prepared_run& p_;
  const train_options& options_;
  run_dir& dir_;
  progress bar_;
  std::size_t J_;
  accounting account_;
  double train_seconds_ = 0;
  int64_t train_images_ = 0;
  double last_test_accuracy_ = 0;
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
        p.cfg.model.arch.c_str(), p.method.str().c_str(), config::to_string(p.cfg.runtime.mode).c_str(),
        stage_sizes(p.cfg).size(), static_cast<long long>(p.per_epoch), p.cfg.training.micro_batch,
        p.cfg.training.accumulation, p.opt.lr,
        options.resume.empty() ? ""
                               : (" (resuming epoch " + std::to_string(p.epoch) + " at micro-batch " +
                                  std::to_string(p.position) + ")")
                                     .c_str(),
        dir.path().c_str());
    std::fflush(stdout);
    return run(p, options, dir).go();
  } catch (const std::exception& e) {
    std::cerr << "\npetra train: failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace petra

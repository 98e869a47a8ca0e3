// Preparing a run.
#include "training/prepared_run.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "training/conv_algorithm_file.hpp"
#include "training/cost_partition.hpp"
#include "training/migration.hpp"
#include "training/rebalance.hpp"
#include "training/resume_rules.hpp"
#include "training/run_dir.hpp"
#include "training/runtime_support.hpp"
#include "training/setup.hpp"
#include "training/snapshot.hpp"

namespace petra {

namespace fs = std::filesystem;

namespace {

/// --stop-after-epoch against the run: an epoch of it that this process trains to the end of.
/// `start`: the micro-batch of the run this process starts from; `phase_end`: where the phase it
/// resumes inside ends (a snapshot's; else `start`). Throws std::invalid_argument saying why not.
void check_stop_after_epoch(const train_options& options, const prepared_run& p, int64_t start,
                            int64_t phase_end) {
  const int n = options.stop_after_epoch;
  if (n == 0) return;
  const std::string flag = "--stop-after-epoch " + std::to_string(n);
  const int64_t stop = n * p.per_epoch;
  if (stop <= start)
    throw std::invalid_argument(flag + ": the run in '" + options.resume + "' is past the end of epoch " +
                                std::to_string(n) + " already (it continues at micro-batch " +
                                std::to_string(start) + " of the run, in epoch " +
                                std::to_string(start / p.per_epoch + 1) +
                                "); name a later epoch, or leave the flag out to train to the end");
  if (stop < phase_end) {
    const int64_t earliest = (phase_end + p.per_epoch - 1) / p.per_epoch;
    throw std::invalid_argument(
        flag + ": the snapshot the run resumes from was taken inside a phase that runs on to micro-batch " +
        std::to_string(phase_end) +
        " of the run, and the pipeline drains (and can stop) only there: name epoch " +
        std::to_string(earliest) + " or later, or leave the flag out");
  }
}

/// faults.crash_at_tick fires once per run and stage: the stages whose crash an earlier process of
/// the run met (its failure line in metrics.jsonl) do not crash again after a resume.
void forget_fired_crashes(config::run_config& c, const std::string& metrics) {
  for (const nlohmann::json& j : logged_events(metrics, "failure")) {
    if (!j.contains("stage") || !j["stage"].is_number_integer() || !j.contains("what") ||
        !j["what"].is_string() ||
        j["what"].get<std::string>().find("faults.crash_at_tick") == std::string::npos)
      continue;
    const int64_t stage = j["stage"].get<int64_t>();
    auto& ticks = c.faults.crash_at_tick;
    if (stage < 1 || stage > static_cast<int64_t>(ticks.size()) || ticks[stage - 1] < 0) continue;
    ticks[stage - 1] = -1;
    std::printf(
        "faults.crash_at_tick: stage %lld crashed in an earlier process of this run; once per run, "
        "it does not crash again\n",
        static_cast<long long>(stage));
  }
}

/// The run directory a new run writes: output.dir/output.name (or the default name). Throws when a
/// file stands where it or a folder above it would go, or it exists and is not empty.
std::string new_run_path(const config::run_config& cfg, const method_options& method) {
  const std::string path =
      (fs::path(cfg.output.dir) / (cfg.output.name.empty()
                                       ? default_run_name(config::to_string(cfg.model.arch), method.str())
                                       : cfg.output.name))
          .string();
  for (fs::path up = path; !up.empty(); up = up.parent_path()) {
    std::error_code ec;
    if (fs::exists(up, ec) && !fs::is_directory(up, ec))
      throw std::invalid_argument("output.dir '" + cfg.output.dir + "', output.name '" + cfg.output.name +
                                  "': '" + up.string() +
                                  "' is a file, not a directory; the run directory cannot go there");
    if (up == up.parent_path()) break;
  }
  if (fs::exists(path) && !fs::is_empty(path))
    throw std::invalid_argument("run directory '" + path +
                                "' already exists and is not empty: choose another output.name or remove it");
  return path;
}

/// The config of the run, checked: a new run's file with its overrides, or the resumed run's
/// config.yaml with what the overrides may change.
void load_checked_config(const train_options& options, prepared_run& p) {
  const bool resuming = !options.resume.empty();
  const fs::path resume_dir(options.resume);
  if (resuming &&
      (!fs::exists(resume_dir / "config.yaml") || !fs::exists(resume_dir / "checkpoint.safetensors")))
    throw std::invalid_argument("'" + options.resume +
                                "' is not a run directory with config.yaml and checkpoint.safetensors");
  const std::string stop_flag = "--stop-after-epoch " + std::to_string(options.stop_after_epoch);
  if (options.stop_after_epoch < 0)
    throw std::invalid_argument(stop_flag + ": expected an epoch (1 or more)");
  p.cfg =
      config::load_config(resuming ? (resume_dir / "config.yaml").string() : options.config, options.sets);
  if (resuming) {  // what the overrides change, checked before anything is loaded or written
    p.resume_changes =
        check_resume_changes(config::load_config((resume_dir / "config.yaml").string()), p.cfg);
    p.resumed_config = p.cfg;
  }
  if (options.stop_after_epoch > p.cfg.training.epochs)
    throw std::invalid_argument(stop_flag + ": the run has " + std::to_string(p.cfg.training.epochs) +
                                " epoch(s) (training.epochs) and ends after its last anyway");
  check_runtime_supports(p.cfg);
  for (const std::string& line : resolve_measured_partition(p.cfg)) std::printf("%s\n", line.c_str());
  check_stage_lists(p.cfg);
  // A bad recorded-algorithms file is bad input: refused here, before anything is written.
  if (!p.cfg.runtime.cudnn_algorithms.empty()) read_conv_algorithms(p.cfg.runtime.cudnn_algorithms);
}

/// The data, the optimizer (its schedule in optimizer steps) and what is fitted to the run's length.
void load_data(prepared_run& p) {
  p.data = load_training_data(p.cfg);
  p.per_epoch = p.data.train_feed->micro_batches_per_epoch();
  const int64_t steps_per_epoch = p.per_epoch / p.cfg.training.accumulation;
  if (steps_per_epoch < 1)
    throw std::invalid_argument(
        "the training set (" + std::to_string(p.data.train->count()) +
        " images) is smaller than one optimizer batch (micro_batch · accumulation = " +
        std::to_string(p.cfg.training.micro_batch * p.cfg.training.accumulation) + ")");
  p.opt = optimizer_for(p.cfg.training, steps_per_epoch);
  check_scheduled_migrations(p.cfg, p.cfg.training.epochs * p.per_epoch);
  if (p.cfg.output.trace) {  // every runtime and node records the window fitted to the run
    p.trace = fit_trace_window(p.cfg, p.cfg.training.epochs * p.per_epoch);
    p.cfg.output.trace_steps = {p.trace.first, p.trace.last};
  }
}

/// pipeline.rebalance: the forced moves checked; a resumed run takes its blocks where its last
/// checkpoint had them, unless the overrides name a partition.
void rebalance_partition(const train_options& options, prepared_run& p) {
  if (!p.cfg.pipeline.rebalance) return;
  const std::vector<int> sizes = stage_sizes(p.cfg);
  check_forced_moves(p.cfg, static_cast<std::size_t>(std::accumulate(sizes.begin(), sizes.end(), 0)),
                     p.per_epoch);
  const bool partition_given =
      std::any_of(options.sets.begin(), options.sets.end(),
                  [](const std::string& s) { return s.rfind("pipeline.stage_blocks=", 0) == 0; });
  if (options.resume.empty() || partition_given) return;
  const std::vector<int> written = checkpoint_partition(
      read_checkpoint((fs::path(options.resume) / "checkpoint.safetensors").string(), sizes.size()));
  if (!written.empty()) p.cfg.pipeline.stage_blocks = written;
}

/// A snapshot taken after the checkpoint (the run stopped inside a phase): the run resumes from its
/// cut. False when there is none to take (none written, an older one, a runtime without cuts).
bool resume_from_snapshot(const train_options& options, prepared_run& p, std::size_t J,
                          int64_t checkpointed) {
  if (!fs::exists(snapshot_manifest(options.resume)) || !p.runtime->takes_cuts()) return false;
  snapshot snap = read_snapshot(options.resume, J);
  const auto number = [&](const char* key) {
    try {
      return std::stoll(snap.metadata.at(key));
    } catch (const std::exception&) {
      throw std::runtime_error("snapshot manifest '" + snap.manifest + "': metadata " + key +
                               " is missing or not a number");
    }
  };
  if (number("global_position") <= checkpointed) return false;
  // An async cut holds queues and recorded messages, a tick-schedule cut the messages of one tick:
  // neither resumes in the other's runtime.
  const bool async_cut = !snap.cut->stages.empty() && snap.cut->stages.front().async.present;
  if (async_cut != (p.cfg.runtime.mode == config::runtime_mode::async))
    throw std::invalid_argument("snapshot '" + snap.manifest + "' was taken by " +
                                (async_cut ? "the async runtime" : "simulate or lockstep") +
                                ": resume it with runtime.mode " +
                                (async_cut ? "async" : "simulate or lockstep"));
  p.epoch = static_cast<int>(number("phase_epoch"));
  p.position = number("phase_first");
  p.resume_count = number("phase_count");
  p.resume_position = number("global_position");
  p.resume_cut = snap.cut;
  const int64_t phase_start = (p.epoch - 1) * p.per_epoch + p.position;
  const int64_t phase_end = phase_start + p.resume_count;
  if (phase_end > p.cfg.training.epochs * p.per_epoch)  // training.epochs lowered below it
    throw config::config_error(
        "training.epochs: the snapshot the run resumes from was taken inside a phase that runs on to "
        "micro-batch " +
        std::to_string(phase_end) + " of the run (the end of epoch " +
        std::to_string((phase_end + p.per_epoch - 1) / p.per_epoch) + "); a resume can keep or raise " +
        "training.epochs from there, not end the run before it");
  check_stop_after_epoch(options, p, p.resume_position, phase_end);
  p.completed_before = phase_start + snap.cut->completed;
  std::printf("resuming from the snapshot before micro-batch %lld of the run (%s)\n",
              static_cast<long long>(p.resume_position), snap.manifest.c_str());
  return true;
}

/// Resuming: from the snapshot after the checkpoint where there is one, else from the checkpoint.
void resume(const train_options& options, prepared_run& p) {
  const std::size_t J = stage_sizes(p.cfg).size();
  const checkpoint from = read_checkpoint((fs::path(options.resume) / "checkpoint.safetensors").string(), J);
  p.epoch = std::stoi(from.metadata.at("epoch"));
  p.position = std::stoll(from.metadata.at("position"));
  const int64_t checkpointed = (p.epoch - 1) * p.per_epoch + p.position;
  if (resume_from_snapshot(options, p, J, checkpointed)) return;
  p.runtime->restore(from);
  if (p.position >= p.per_epoch) p.epoch += 1, p.position = 0;
  const int done = p.epoch - 1;  // epochs trained to their end
  if (done > p.cfg.training.epochs)
    throw config::config_error(
        "training.epochs: the run in '" + options.resume + "' has trained " + std::to_string(done) +
        " epochs already, more than " + std::to_string(p.cfg.training.epochs) +
        "; a resume can keep or raise training.epochs, not end the run before where it is");
  if (p.epoch > p.cfg.training.epochs)
    throw std::invalid_argument(
        "the run in '" + options.resume + "' is already complete (" + std::to_string(done) +
        " epochs); to train it on, raise training.epochs: --set training.epochs=" + std::to_string(done + 1) +
        " or more");
  p.completed_before = checkpointed;
  check_stop_after_epoch(options, p, checkpointed, checkpointed);
}

}  // namespace

prepared_run prepare(const train_options& options, const runtime_factory& make_runtime) {
  prepared_run p;
  const bool resuming = !options.resume.empty();
  load_checked_config(options, p);
  p.method = method_for(p.cfg.training);
  p.run_path = resuming ? options.resume : new_run_path(p.cfg, p.method);
  load_data(p);
  rebalance_partition(options, p);
  if (resuming) forget_fired_crashes(p.cfg, (fs::path(options.resume) / "metrics.jsonl").string());
  p.runtime = make_runtime(p.cfg, p.data, p.opt);
  if (resuming)
    resume(options, p);
  else
    check_stop_after_epoch(options, p, 0, 0);
  return p;
}

}  // namespace petra

// Preparing a run.
#include "training/prepared_run.hpp"

#include <filesystem>

#include "training/run_dir.hpp"
#include "training/runtime_support.hpp"
#include "training/setup.hpp"

namespace petra {

namespace fs = std::filesystem;

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

}  // namespace petra

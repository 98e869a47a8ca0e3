// `petra eval`: a checkpoint (or a run directory's latest) on the test set, on the reference
// simulator with the checkpoint's model, whatever runtime wrote it.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "app/commands.hpp"
#include "compute/serialize/safetensors.hpp"
#include "training/runtime_support.hpp"
#include "training/setup.hpp"
#include "training/simulate_runtime.hpp"
#include "training/training_data.hpp"

namespace petra::app {

int eval_command(const std::string& target, const std::vector<std::string>& sets, int recalibrate) {
  namespace fs = std::filesystem;
  try {
    const std::string path =
        fs::is_directory(target) ? (fs::path(target) / "checkpoint.safetensors").string() : target;
    if (!fs::exists(path))
      throw std::invalid_argument("no checkpoint at '" + path +
                                  "': give a run directory or a .safetensors file");
    const safetensors_file file = load_safetensors(path);
    auto it = file.metadata.find("config");
    if (it == file.metadata.end()) {
      // A snapshot's part (<run>/snapshots/<name>/stage-N.safetensors) holds one stage's cut, no model.
      if (file.metadata.count("stage") != 0) {
        const fs::path run = fs::path(path).parent_path().parent_path().parent_path();
        throw std::invalid_argument("'" + path +
                                    "' is one stage's part of a snapshot (the pipeline's state inside a "
                                    "phase), not a checkpoint: evaluate the run directory (petra eval " +
                                    (run.empty() ? std::string("RUN") : run.string()) +
                                    ") or its checkpoint.safetensors");
      }
      throw std::invalid_argument("'" + path +
                                  "' carries no config in its metadata: it is not a checkpoint petra train "
                                  "wrote; give a run directory or its checkpoint.safetensors");
    }
    // Only the model and the data matter here: every stage on this process's CPU.
    config::run_config cfg =
        for_evaluation(config::parse_config(it->second, path + " (metadata config)", sets));
    if (recalibrate > 0 && cfg.model.arch == config::model_arch::revvit)
      throw std::invalid_argument(
          "--bn-recalibrate: the checkpoint's model is a revvit, which has no batch norm");
    cfg.training.bn_recalibration = recalibrate;  // (only the feed it needs follows from it here)
    training_data data = load_training_data(cfg);
    const int64_t steps = data.train_feed->micro_batches_per_epoch() / cfg.training.accumulation;
    auto runtime = make_simulate_runtime(cfg, data, optimizer_for(cfg.training, std::max<int64_t>(1, steps)));
    const checkpoint from = read_checkpoint(path, stage_sizes(cfg).size());
    runtime->restore(from);
    if (recalibrate > 0) runtime->recalibrate(*data.calibration_feed, recalibrate);
    const eval_result r = runtime->evaluate(*data.test_feed);
    const std::string recalibrated =
        recalibrate > 0
            ? " (BN statistics re-estimated from " + std::to_string(recalibrate) + " training micro-batches)"
            : "";
    std::printf("%s: epoch %s, %lld test images, loss %.4f, accuracy %.2f%%%s\n", path.c_str(),
                from.metadata.count("epoch") ? from.metadata.at("epoch").c_str() : "?",
                static_cast<long long>(r.samples), r.loss, 100 * r.accuracy, recalibrated.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "petra eval: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace petra::app

// `petra eval`: a checkpoint (or a run directory's latest) on the test set.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "app/checkpoint.hpp"
#include "app/commands.hpp"
#include "actors/setup.hpp"
#include "actors/training_data.hpp"
#include "compute/serialize/safetensors.hpp"

namespace petra::app {

int eval_command(const std::string& target, const std::vector<std::string>& sets) {
  namespace fs = std::filesystem;
  try {
    const std::string path = fs::is_directory(target) ? (fs::path(target) / "checkpoint.safetensors").string() : target;
    if (!fs::exists(path))
      throw std::invalid_argument("no checkpoint at '" + path + "': give a run directory or a .safetensors file");
    const safetensors_file file = load_safetensors(path);
    auto it = file.metadata.find("config");
    if (it == file.metadata.end())
      throw std::invalid_argument("checkpoint '" + path + "' carries no config in its metadata");
    const config::run_config cfg = config::parse_config(it->second, path + " (metadata config)", sets);
    training_data data = load_training_data(cfg);
    auto be = make_cpu_backend(cfg.runtime.threads);
    const int64_t steps = data.train_feed->micro_batches_per_epoch() / cfg.training.accumulation;
    auto stages = build_stages(cfg, *be, optimizer_for(cfg.training, std::max<int64_t>(1, steps)));
    const auto meta = load_checkpoint(path, stages, *be);
    simulator sim(stages, *be, method_for(cfg.training));
    const eval_result r = evaluate(sim, *data.test_feed);
    std::printf("%s: epoch %s, %lld test images, loss %.4f, accuracy %.2f%%\n", path.c_str(),
                meta.count("epoch") ? meta.at("epoch").c_str() : "?", static_cast<long long>(r.samples), r.loss,
                100 * r.accuracy);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "petra eval: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace petra::app

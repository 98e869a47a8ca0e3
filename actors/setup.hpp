// From the typed config to compute objects: model spec, method, optimizer, stages.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/models/revnet.hpp"
#include "compute/pipeline/method.hpp"
#include "compute/pipeline/stage.hpp"
#include "config/config.hpp"

namespace petra {

/// The model preset named by model.arch with the config's overrides applied.
revnet_spec model_spec(const config::model_config& m);

method_options method_for(const config::training_config& t);

/// Optimizer settings for a run of `steps_per_epoch` optimizer steps per epoch.
optimizer_settings optimizer_for(const config::training_config& t, int64_t steps_per_epoch);

/// The model built on `be` (seeded by training.seed) and cut into stages per pipeline.stage_blocks.
std::vector<std::unique_ptr<stage>> build_stages(const config::run_config& c, backend& be,
                                                 const optimizer_settings& optimizer);

/// One stage's share of the model with its own device context (pipeline.devices/threads).
struct placed_stage {
  std::shared_ptr<backend> device;
  std::shared_ptr<stage> compute;
};

/// Every stage on its own backend, as the actor runtimes place them; with `wanted`, only the
/// stages it accepts are kept (the others stay empty: they live in another process).
std::vector<placed_stage> build_placed_stages(const config::run_config& c, const optimizer_settings& optimizer,
                                              const std::function<bool(std::size_t)>& wanted = {});

/// Where stage j runs: "local" or "host:port" (pipeline.nodes; names of `nodes:` resolved).
std::string node_of(const config::run_config& c, std::size_t j);

/// Blocks per stage (pipeline.stage_blocks resolved against the model).
std::vector<int> stage_sizes(const config::run_config& c);

}  // namespace petra

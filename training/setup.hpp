// From the typed config to compute objects: model spec, method, optimizer, and the stages each
// on its own backend, built the same way for every runtime (so lockstep ≡ simulate bit for bit).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/backend_factory.hpp"
#include "compute/models/network.hpp"
#include "compute/pipeline/stage.hpp"
#include "config/config.hpp"
#include "training/method.hpp"

namespace petra {

/// The network model.arch names with the config's keys applied: a RevNet preset with its overrides,
/// or a RevViT of model.depth, width, heads, patch and mlp_ratio (0: revvit's own). Throws
/// config::config_error naming the key when the keys together cannot build it.
network_spec model_spec(const config::model_config& m);

method_options method_for(const config::training_config& t);

/// Optimizer settings for a run of `steps_per_epoch` optimizer steps per epoch.
optimizer_settings optimizer_for(const config::training_config& t, int64_t steps_per_epoch);

/// Blocks per stage (pipeline.stage_blocks resolved against the model).
std::vector<int> stage_sizes(const config::run_config& c);

/// The per-stage lists against the stages the model is cut into, once when a run is prepared:
/// with pipeline.stage_blocks empty, pipeline.devices, threads and nodes give one entry per stage
/// (else the config's validation compared them with stage_blocks), and no faults list names a stage
/// past the last, and no CPU stage of this process asks for more threads than the machine has cores.
/// Throws config::config_error naming the key.
void check_stage_lists(const config::run_config& c);

/// Where stage j runs: "local" or "host:port" (pipeline.nodes; names of `nodes:` resolved).
std::string node_of(const config::run_config& c, std::size_t j);

/// The device of stage j (pipeline.devices; cpu when not given).
device device_of(const config::run_config& c, std::size_t j);

/// The backend of stage j: its device, stage_threads() compute threads (pipeline.threads[j], or the
/// machine's cores split over the CPU stages),
/// runtime.precision, runtime.deterministic and the runtime.sim_* settings; a sim device from `sim`,
/// the simulated devices of this build. `threads` > 0 replaces pipeline.threads[j].
std::unique_ptr<backend> make_stage_backend(const config::run_config& c, std::size_t j,
                                            const std::shared_ptr<sim_devices>& sim, int threads = 0);

/// One stage's share of the model with its own device context.
struct placed_stage {
  std::shared_ptr<backend> device;
  std::shared_ptr<stage> compute;
  activation_shape input{};  // of the stage's input, batch 1
};

/// Every stage on its own backend (simulated devices shared among them); with `wanted`, only the stages it
/// accepts are built (the others stay empty: they live in another process). `sim`: the simulated
/// devices to place them on (a stage rebuilt alone joins those its neighbours compute on); null:
/// new ones. Throws std::invalid_argument naming pipeline.devices[j] when a device cannot be had.
std::vector<placed_stage> build_placed_stages(const config::run_config& c,
                                              const optimizer_settings& optimizer,
                                              const std::function<bool(std::size_t)>& wanted = {},
                                              std::shared_ptr<sim_devices> sim = nullptr);

/// The backend the loss is computed on (the loss actor's; the simulator uses the same).
std::unique_ptr<backend> make_loss_backend();

}  // namespace petra

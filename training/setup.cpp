// From the typed config to compute objects.
#include "training/setup.hpp"

#include <cmath>
#include <stdexcept>

#include "compute/pipeline/partition.hpp"
#include "compute/sim/sim_devices.hpp"
#include "training/conv_algorithm_file.hpp"
#include "training/stage_threads.hpp"

namespace petra {

namespace {

/// model.arch revvit: revvit_spec's own shape where a key is 0; the combinations checked here, as the
/// keys' ranges are by the config's validation.
revvit_spec revvit_model(const config::model_config& m) {
  revvit_spec s;
  s.num_classes = m.num_classes;
  if (m.input.size() == 3) s.in_channels = m.input[0], s.height = m.input[1], s.width = m.input[2];
  if (m.depth > 0) s.depth = m.depth;
  if (m.width > 0) s.embed_dim = m.width;
  if (m.heads > 0) s.heads = m.heads;
  if (m.patch > 0) s.patch = m.patch;
  if (m.mlp_ratio > 0) s.mlp_ratio = m.mlp_ratio;
  const auto fail = [](const char* key, const std::string& why) {
    throw config::config_error(std::string(key) + ": " + why);
  };
  if (s.embed_dim % s.heads)
    fail("model.heads", std::to_string(s.heads) + " heads do not divide model.width " +
                            std::to_string(s.embed_dim) + ": each head takes width/heads features");
  if (s.height % s.patch || s.width % s.patch)
    fail("model.patch", std::to_string(s.patch) + "×" + std::to_string(s.patch) +
                            " patches do not tile model.input " + std::to_string(s.height) + "×" +
                            std::to_string(s.width));
  if (s.hidden() < 1)
    fail("model.mlp_ratio", "a ratio of " + std::to_string(s.mlp_ratio) + " to model.width " +
                                std::to_string(s.embed_dim) + " leaves the MLP no hidden feature");
  s.validate();
  return s;
}

}  // namespace

network_spec model_spec(const config::model_config& m) {
  if (m.arch == config::model_arch::revvit) return network_spec(revvit_model(m));
  revnet_spec s = revnet_preset(config::to_string(m.arch));
  s.num_classes = m.num_classes;
  if (m.input.size() == 3) s.in_channels = m.input[0], s.height = m.input[1], s.width = m.input[2];
  if (m.stem != config::stem_kind::preset) s.imagenet_stem = m.stem == config::stem_kind::imagenet;
  if (m.block != config::block_kind::preset) s.bottleneck = m.block == config::block_kind::bottleneck;
  if (m.stem_width > 0) s.stem_width = m.stem_width;
  if (!m.widths.empty()) s.widths = m.widths;
  if (!m.hidden.empty()) s.hidden = m.hidden;
  if (!m.blocks.empty()) s.blocks = m.blocks;
  s.validate();
  return network_spec(s);
}

method_options method_for(const config::training_config& t) {
  method_options m;
  switch (t.method) {
    case config::training_method::backprop:
      m.kind = method_kind::backprop;
      break;
    case config::training_method::delayed:
      m.kind = method_kind::delayed;
      break;
    case config::training_method::petra:
      m.kind = method_kind::petra;
      break;
    case config::training_method::forward_gradient:
      m.kind = method_kind::forward_gradient;
      break;
  }
  const config::forward_gradient_config& fg = t.forward_gradient;
  m.forward_gradient.guess =
      fg.guess == config::gradient_guess::random ? guess_kind::random : guess_kind::local;
  m.forward_gradient.target =
      fg.target == config::gradient_target::local ? target_kind::local : target_kind::global;
  m.forward_gradient.aux_width = fg.aux_width;
  m.stash_inputs = t.stash_inputs;
  m.stash_weights = t.stash_weights;
  return m;
}

optimizer_settings optimizer_for(const config::training_config& t, int64_t steps_per_epoch) {
  optimizer_settings o;
  o.lr = goyal_lr(t.optimizer.base_lr, t.micro_batch, t.accumulation);
  o.kind = t.optimizer.kind == config::optimizer_kind::adamw ? optimizer_kind::adamw : optimizer_kind::sgd;
  o.momentum = t.optimizer.momentum;
  o.nesterov = t.optimizer.nesterov;
  o.beta1 = t.optimizer.betas.at(0);
  o.beta2 = t.optimizer.betas.at(1);
  o.eps = t.optimizer.eps;
  o.weight_decay = t.optimizer.weight_decay;
  o.accumulation = t.accumulation;
  switch (t.schedule.kind) {
    case config::lr_schedule::cosine:
      o.schedule = schedule_kind::cosine;
      break;
    case config::lr_schedule::step:
      o.schedule = schedule_kind::step;
      break;
    case config::lr_schedule::constant:
      o.schedule = schedule_kind::constant;
      break;
  }
  o.warmup_steps =
      static_cast<int64_t>(std::llround(t.schedule.warmup_epochs * static_cast<double>(steps_per_epoch)));
  o.total_steps = steps_per_epoch * t.epochs;
  for (double e : t.schedule.milestones)
    o.milestones.push_back(static_cast<int64_t>(std::llround(e * static_cast<double>(steps_per_epoch))));
  o.gamma = t.schedule.gamma;
  return o;
}

std::vector<int> stage_sizes(const config::run_config& c) {
  return resolve_partition(c.pipeline.stage_blocks, model_spec(c.model).block_count());
}

void check_stage_lists(const config::run_config& c) {
  const std::size_t stages = stage_sizes(c).size();
  const auto fail = [&](const char* key, std::size_t size, const std::string& why) {
    throw config::config_error(std::string(key) + " has " + std::to_string(size) +
                               " entries but the model makes " + std::to_string(stages) + " stages" +
                               (c.pipeline.stage_blocks.empty()
                                    ? " (pipeline.stage_blocks is empty: one stage per block of " +
                                          config::to_string(c.model.arch) + ")"
                                    : "") +
                               why);
  };
  // With pipeline.stage_blocks given, the config's own validation compared these with it.
  if (c.pipeline.stage_blocks.empty())
    for (const auto& [key, size] :
         {std::pair<const char*, std::size_t>{"pipeline.devices", c.pipeline.devices.size()},
          {"pipeline.threads", c.pipeline.threads.size()},
          {"pipeline.nodes", c.pipeline.nodes.size()}})
      if (size != 0 && size != stages) fail(key, size, ": give one per stage");
  const config::faults_config& f = c.faults;
  for (const auto& [key, size] :
       {std::pair<const char*, std::size_t>{"faults.forward_delay", f.forward_delay.size()},
        {"faults.backward_delay", f.backward_delay.size()},
        {"faults.jitter_ms", f.jitter_ms.size()},
        {"faults.drop", f.drop.size()},
        {"faults.duplicate", f.duplicate.size()},
        {"faults.reorder", f.reorder.size()},
        {"faults.slow", f.slow.size()},
        {"faults.crash_at_tick", f.crash_at_tick.size()},
        {"faults.drop_burst", f.drop_burst.size()},
        {"faults.drop_burst_at_tick", f.drop_burst_at_tick.size()}})
    if (size > stages) fail(key, size, ": entry " + std::to_string(stages) + " and later name no stage");
  check_stage_threads(c, usable_cores());
}

std::string node_of(const config::run_config& c, std::size_t j) {
  if (j >= c.pipeline.nodes.size() || c.pipeline.nodes[j].empty()) return "local";
  return config::resolve_node_address(c, c.pipeline.nodes[j]);  // a name of `nodes:` → its address
}

device device_of(const config::run_config& c, std::size_t j) {
  if (j >= c.pipeline.devices.size()) return device{};
  const config::device_spec& d = c.pipeline.devices[j];
  switch (d.type) {
    case config::device_spec::kind::cpu:
      return device{};
    case config::device_spec::kind::cuda:
      return device{device_type::cuda, d.index};
    case config::device_spec::kind::sim:
      return device{device_type::sim, d.index};
  }
  return device{};
}

namespace {

/// runtime.precision as the backends take it.
math_precision math_precision_of(config::compute_precision p) {
  switch (p) {
    case config::compute_precision::fp32:
      return math_precision::fp32;
    case config::compute_precision::tf32:
      return math_precision::tf32;
    case config::compute_precision::bf16:
      return math_precision::bf16;
    case config::compute_precision::bf16_emulated:
      return math_precision::bf16_emulated;
  }
  return math_precision::fp32;
}

}  // namespace

std::unique_ptr<backend> make_stage_backend(const config::run_config& c, std::size_t j,
                                            const std::shared_ptr<sim_devices>& sim, int threads) {
  backend_options options;
  options.threads = threads > 0 ? threads : stage_threads(c, j, usable_cores());
  options.precision = math_precision_of(c.runtime.precision);
  options.deterministic = c.runtime.deterministic;
  set_conv_algorithm_options(c, options);
  options.sim = sim;
  options.sim_latency_us = c.runtime.sim_latency_us;
  options.sim_skip_import_wait = c.testing.sim_skip_import_wait;
  try {
    return make_backend(device_of(c, j), options);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("pipeline.devices[" + std::to_string(j) + "] (stage " +
                                std::to_string(j + 1) + "): " + e.what());
  }
}

std::vector<placed_stage> build_placed_stages(const config::run_config& c,
                                              const optimizer_settings& optimizer,
                                              const std::function<bool(std::size_t)>& wanted,
                                              std::shared_ptr<sim_devices> sim) {
  const std::vector<int> sizes = stage_sizes(c);
  std::vector<placed_stage> placed(sizes.size());
  std::vector<std::size_t> stage_of_block;
  if (!sim) sim = std::make_shared<sim_devices>();  // this build's simulated devices, if any stage has one
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    // A stage built elsewhere gets a stand-in: the model is initialised whole, so that every
    // process draws the same weights for the stages it keeps.
    placed[j].device = !wanted || wanted(j) ? make_stage_backend(c, j, sim) : make_cpu_backend(1);
    for (int b = 0; b < sizes[j]; ++b) stage_of_block.push_back(j);
  }
  auto blocks = build_network(
      model_spec(c.model), [&](std::size_t i) -> backend& { return *placed[stage_of_block.at(i)].device; },
      c.training.seed);
  auto groups = partition_blocks(std::move(blocks), sizes);
  const method_options method = method_for(c.training);
  activation_shape shape = input_shape(model_spec(c.model), 1);
  for (std::size_t j = 0; j < groups.size(); ++j) {
    placed[j].input = shape;
    for (const auto& b : groups[j]) shape = b->output_shape(shape);
  }
  for (std::size_t j = 0; j < groups.size(); ++j) {
    if (wanted && !wanted(j)) {
      groups[j].clear();
      placed[j] = placed_stage{};
      continue;
    }
    stage_options options = method.for_stage(c.runtime.inversion_sample_every, j + 1 == groups.size());
    options.max_inversion_error = c.training.max_inversion_error;
    placed[j].compute = std::make_shared<stage>(static_cast<int>(j), std::move(groups[j]), *placed[j].device,
                                                optimizer, options);
    // The rebuild's stream: another of the stage's device, on runtime.overlap_rebuild_threads
    // threads of its own (0: the stage's count). Its ops' bits do not depend on their thread count.
    if (c.runtime.overlap_rebuild && placed[j].compute->can_overlap_rebuild())
      placed[j].compute->overlap_rebuild(make_stage_backend(c, j, sim, c.runtime.overlap_rebuild_threads));
  }
  return placed;
}

std::unique_ptr<backend> make_loss_backend() { return make_cpu_backend(1); }

}  // namespace petra

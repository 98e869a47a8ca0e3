// Small runs of the trainers on Fashion-MNIST (the tiny model), and their final weights.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "actors/coordinator.hpp"
#include "compute/serialize/safetensors.hpp"
#include "tests/skip.hpp"
#include "training/accounting.hpp"
#include "training/setup.hpp"
#include "training/simulate_runtime.hpp"
#include "training/stage_metrics.hpp"

namespace petra::testing {

/// Sets the method from "petra", "backprop", "delayed", "delayed+inputs", "delayed+weights" or
/// "delayed+inputs+weights".
inline void set_method(config::run_config& c, const std::string& method) {
  c.training.method = config::parse_training_method(method.substr(0, method.find('+')));
  c.training.stash_inputs = method.find("+inputs") != std::string::npos;
  c.training.stash_weights = method.find("+weights") != std::string::npos;
}

/// The tiny model on 1×28×28 Fashion-MNIST, J = 4 (stem | g1.b0 g1.b1 | g2.b0 | head).
inline config::run_config tiny_config(const std::string& mode, const std::string& method,
                                      int64_t images = 512) {
  config::run_config c = config::load_config("tiny");
  c.runtime.mode = config::parse_runtime_mode(mode);
  set_method(c, method);
  c.training.micro_batch = 8;
  c.training.accumulation = 2;
  c.training.epochs = 1;
  c.data.train_limit = images;
  c.data.test_limit = 64;
  c.pipeline.stage_blocks = {1, 2, 1, 1};
  c.runtime.inversion_sample_every = 4;
  c.output.progress = false;
  return c;
}

/// revvit_tiny_fmnist made small (depth 3, width 32, 2 heads, MLP ratio 2; J = 5, one block per
/// stage), 256 training images in micro-batches of 8, k = 2, one epoch, in `mode` under `method`.
inline config::run_config small_revvit(const char* mode, const std::string& method) {
  config::run_config c = config::load_config(
      "revvit_tiny_fmnist", {"model.depth=3", "model.width=32", "model.heads=2", "model.mlp_ratio=2"});
  set_method(c, method);
  c.runtime.mode = config::parse_runtime_mode(mode);
  c.data.train_limit = 256;
  c.data.test_limit = 16;
  c.training.epochs = 1;
  c.training.micro_batch = 8;
  c.training.accumulation = 2;  // 16 optimizer steps, whatever the preset's k
  c.output.progress = false;
  c.runtime.inversion_sample_every = 4;
  return c;
}

struct trained {
  phase_result totals;
  nlohmann::json stages = nlohmann::json::array();  // per stage, as in metrics.jsonl
  std::vector<std::pair<std::string, tensor>> weights;
};

/// The runtime runtime.mode names.
inline std::unique_ptr<pipeline_runtime> make_runtime(const config::run_config& c, training_data& data,
                                                      const optimizer_settings& opt) {
  if (c.runtime.mode == config::runtime_mode::simulate) return make_simulate_runtime(c, data, opt);
  return make_actor_runtime(c, data, opt);
}

/// Trains one phase of `count` micro-batches (all of epoch 1 when 0) and reads back every tensor.
inline trained train_once(const config::run_config& c, int64_t count = 0) {
  training_data data = load_training_data(c);
  const int64_t per_epoch = data.train_feed->micro_batches_per_epoch();
  const optimizer_settings opt = optimizer_for(c.training, per_epoch / c.training.accumulation);
  std::unique_ptr<pipeline_runtime> t = make_runtime(c, data, opt);
  trained out;
  out.totals = t->train(phase_request::of(1, 0, count ? count : per_epoch), {});
  // The stages' records: of the epoch when it ended in the phase (they start afresh there).
  const bool ended = !out.totals.epochs.empty();
  const auto& reports = ended ? out.totals.epochs.back().stages : out.totals.stages;
  const auto& faults = ended ? out.totals.epochs.back().faults : out.totals.faults;
  for (std::size_t j = 0; j < reports.size(); ++j)
    out.stages.push_back(stage_json(reports[j], faults[j], c, reports.size()));
  for (const stage_snapshot& s : t->snapshot())
    for (const named_tensor& n : s.tensors) out.weights.emplace_back(n.name, n.value);
  return out;
}

/// Number of tensors that differ in any bit.
inline int differing(const trained& a, const trained& b) {
  REQUIRE(a.weights.size() == b.weights.size());
  int n = 0;
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    const tensor& x = a.weights[i].second;
    const tensor& y = b.weights[i].second;
    if (a.weights[i].first != b.weights[i].first || x.shape() != y.shape() ||
        std::memcmp(x.data(), y.data(), x.bytes()) != 0)
      ++n;
  }
  return n;
}

}  // namespace petra::testing

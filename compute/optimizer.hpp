// SGD with momentum/Nesterov over k accumulated micro-batches, and its learning-rate schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/parameter.hpp"

namespace petra {

enum class schedule_kind { constant, cosine, step };

struct optimizer_settings {
  double lr = 0.05;  // peak rate, already scaled: base_lr · micro_batch · k / 256
  double momentum = 0.9;
  bool nesterov = true;
  double weight_decay = 5e-4;  // on parameters with decay = true only
  int accumulation = 1;        // k
  schedule_kind schedule = schedule_kind::cosine;
  int64_t warmup_steps = 0;         // linear warm-up: lr·(s+1)/warmup_steps for s < warmup_steps
  int64_t total_steps = 1;          // cosine reaches 0 here
  std::vector<int64_t> milestones;  // step schedule: lr ×= gamma at each
  double gamma = 0.1;
};

/// Goyal et al.: lr = base_lr · micro_batch · k / 256.
double goyal_lr(double base_lr, int micro_batch, int accumulation);

/// The learning rate of optimizer step `step` (0-based).
double learning_rate(const optimizer_settings& s, int64_t step);

/// Applies one step to each parameter: g = grad / k (+ wd·w), momentum, w −= lr·step;
/// then zeroes the gradients (all of it one backend op, sgd_step). Its state (momentum buffers, step count)
/// belongs to checkpoints.
class sgd_optimizer {
 public:
  sgd_optimizer(backend& be, optimizer_settings settings, std::vector<parameter*> params);

  void step();
  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }
  const optimizer_settings& settings() const { return settings_; }

 private:
  backend& be_;
  optimizer_settings settings_;
  std::vector<parameter*> params_;
  int64_t steps_ = 0;
};

}  // namespace petra

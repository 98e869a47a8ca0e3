// The optimizer of a stage's parameters over k accumulated micro-batches (SGD with momentum/Nesterov,
// or AdamW), and its learning-rate schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/parameter.hpp"

namespace petra {

enum class schedule_kind { constant, cosine, step };
enum class optimizer_kind { sgd, adamw };

struct optimizer_settings {
  optimizer_kind kind = optimizer_kind::sgd;
  double lr = 0.05;            // peak rate, already scaled: base_lr · micro_batch · k / 256
  double momentum = 0.9;       // SGD
  bool nesterov = true;        // SGD
  double beta1 = 0.9;          // AdamW
  double beta2 = 0.999;        // AdamW
  double eps = 1e-8;           // AdamW
  double weight_decay = 5e-4;  // on parameters with decay = true only (AdamW: decoupled, w ·= 1 − lr·wd)
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

/// Applies one step to each parameter, then zeroes the gradients (all of it one backend op):
/// SGD (g = grad / k + wd·w, momentum, w −= lr·step: sgd_step) or AdamW (adamw_step, t = the steps
/// taken + 1). Its state (momentum buffers or AdamW's moments, the step count) belongs to
/// checkpoints. Under AdamW it gives each parameter its second moment (zero) if it has none.
class param_optimizer {
 public:
  param_optimizer(backend& be, optimizer_settings settings, std::vector<parameter*> params);

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

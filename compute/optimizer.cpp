// SGD, AdamW and the learning-rate schedule.
#include "compute/optimizer.hpp"

#include <cmath>
#include <stdexcept>

namespace petra {

double goyal_lr(double base_lr, int micro_batch, int accumulation) {
  return base_lr * micro_batch * accumulation / 256.0;
}

double learning_rate(const optimizer_settings& s, int64_t step) {
  if (step < s.warmup_steps)
    return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  switch (s.schedule) {
    case schedule_kind::constant:
      return s.lr;
    case schedule_kind::cosine: {
      const double span = static_cast<double>(std::max<int64_t>(1, s.total_steps - s.warmup_steps));
      const double progress = std::min(1.0, static_cast<double>(step - s.warmup_steps) / span);
      return s.lr * 0.5 * (1.0 + std::cos(M_PI * progress));
    }
    case schedule_kind::step: {
      double lr = s.lr;
      for (int64_t m : s.milestones)
        if (step >= m) lr *= s.gamma;
      return lr;
    }
  }
  throw std::logic_error("learning_rate: unknown schedule");
}

param_optimizer::param_optimizer(backend& be, optimizer_settings settings, std::vector<parameter*> params)
    : be_(be), settings_(std::move(settings)), params_(std::move(params)) {
  if (settings_.accumulation < 1) throw std::invalid_argument("param_optimizer: accumulation k must be ≥ 1");
  if (settings_.kind == optimizer_kind::adamw)
    for (parameter* p : params_)
      if (!p->second_moment.defined()) p->second_moment = be_.zeros(p->value.shape());
}

void param_optimizer::step() {
  if (settings_.kind == optimizer_kind::adamw) {
    adamw_update_params p;
    p.lr = static_cast<float>(learning_rate(settings_, steps_));
    p.beta1 = static_cast<float>(settings_.beta1);
    p.beta2 = static_cast<float>(settings_.beta2);
    p.eps = static_cast<float>(settings_.eps);
    p.grad_scale = 1.0f / static_cast<float>(settings_.accumulation);
    p.step = steps_ + 1;
    std::vector<adamw_target> targets;
    targets.reserve(params_.size());
    for (parameter* param : params_)
      targets.push_back({&param->value, &param->grad, &param->momentum, &param->second_moment,
                         param->decay ? static_cast<float>(settings_.weight_decay) : 0.f});
    be_.adamw_step(targets, p);
    ++steps_;
    return;
  }
  sgd_update_params p;
  p.lr = static_cast<float>(learning_rate(settings_, steps_));
  p.momentum = static_cast<float>(settings_.momentum);
  p.nesterov = settings_.nesterov;
  p.grad_scale = 1.0f / static_cast<float>(settings_.accumulation);
  // Every parameter in one op (one launch on a GPU), each gradient zeroed by it.
  std::vector<sgd_target> targets;
  targets.reserve(params_.size());
  for (parameter* param : params_)
    targets.push_back({&param->value, &param->grad, &param->momentum,
                       param->decay ? static_cast<float>(settings_.weight_decay) : 0.f});
  be_.sgd_step(targets, p);
  ++steps_;
}

}  // namespace petra

// The per-step scalars of an AdamW update, formed once on the host (in double, as PyTorch forms
// them in Python) and shared by every backend's element loop, so that they round alike.
#pragma once

#include <cmath>

#include "compute/backend.hpp"

namespace petra {

struct adamw_scalars {
  float decay;      // 1 − lr·wd
  float step_size;  // lr / (1 − β1^t)
  float bc2_sqrt;   // √(1 − β2^t)
  float one_minus_beta1;
  float one_minus_beta2;
};

inline adamw_scalars adamw_scalars_of(const adamw_update_params& p) {
  const double lr = p.lr, t = static_cast<double>(p.step);
  adamw_scalars s;
  s.decay = static_cast<float>(1.0 - lr * static_cast<double>(p.weight_decay));
  s.step_size = static_cast<float>(lr / (1.0 - std::pow(static_cast<double>(p.beta1), t)));
  s.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(p.beta2), t)));
  s.one_minus_beta1 = static_cast<float>(1.0 - static_cast<double>(p.beta1));
  s.one_minus_beta2 = static_cast<float>(1.0 - static_cast<double>(p.beta2));
  return s;
}

}  // namespace petra

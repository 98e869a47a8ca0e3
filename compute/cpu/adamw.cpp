// AdamW as torch.optim.AdamW (decoupled weight decay, bias-corrected moments, amsgrad off).
#include <cmath>

#include "compute/adamw_scalars.hpp"
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

void cpu_backend::adamw_update_impl(tensor& w, const tensor& grad, tensor& m, tensor& v,
                                    const adamw_update_params& p) {
  forget_staged_dy();
  const int64_t count = w.numel();
  float* weights = w.data();
  float* first = m.data();
  float* second = v.data();
  const float* g_in = grad.data();
  const adamw_scalars s = adamw_scalars_of(p);
  const float beta1 = p.beta1, beta2 = p.beta2, eps = p.eps, scale = p.grad_scale;
#pragma omp parallel for simd num_threads(cpu::team_for(count, threads_)) schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const float g = scale * g_in[i];
    const float mi = beta1 * first[i] + s.one_minus_beta1 * g;
    const float vi = beta2 * second[i] + s.one_minus_beta2 * g * g;
    first[i] = mi;
    second[i] = vi;
    const float denom = std::sqrt(vi) / s.bc2_sqrt + eps;
    weights[i] = weights[i] * s.decay - s.step_size * (mi / denom);
  }
}

}  // namespace petra

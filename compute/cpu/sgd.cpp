// SGD with momentum, weight decay and Nesterov, as torch.optim.SGD (dampening 0).
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

void cpu_backend::sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                                  const sgd_update_params& p) {
  forget_staged_dy();
  const int64_t count = w.numel();
  float* weights = w.data();
  const float* g_in = grad.data();
  const float lr = p.lr, mu = p.momentum, wd = p.weight_decay, scale = p.grad_scale;
  if (mu == 0.f) {
#pragma omp parallel for simd num_threads(cpu::team_for(count, threads_)) schedule(static)
    for (int64_t i = 0; i < count; ++i) weights[i] -= lr * (scale * g_in[i] + wd * weights[i]);
    return;
  }
  // A zero buffer makes the first step buf = g, as PyTorch's buf = clone(g).
  float* buffer = momentum_buffer.data();
  const bool nesterov = p.nesterov;
#pragma omp parallel for simd num_threads(cpu::team_for(count, threads_)) schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const float g = scale * g_in[i] + wd * weights[i];
    const float b = mu * buffer[i] + g;
    buffer[i] = b;
    weights[i] -= lr * (nesterov ? g + mu * b : b);
  }
}

}  // namespace petra

// SGD with momentum, weight decay and Nesterov, as torch.optim.SGD (dampening 0).
#include "compute/cpu/checks.hpp"
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

using cpu::fail;

void cpu_backend::sgd_update(tensor& w, const tensor& grad, tensor& momentum_buffer,
                             const sgd_update_params& p) {
  const char* op = "sgd_update";
  cpu::require_host(op, "w", w, w.rank(), "on the host");
  cpu::require_host(op, "grad", grad, grad.rank(), "on the host");
  cpu::require_same_shape(op, "grad", grad, "w", w);
  if (p.nesterov && p.momentum <= 0.f)
    fail(op, "nesterov needs a positive momentum, got " + std::to_string(p.momentum) +
                 ": set momentum (e.g. 0.9) or turn nesterov off");
  if (p.momentum < 0.f) fail(op, "momentum " + std::to_string(p.momentum) + " must not be negative");
  if (p.momentum != 0.f) {
    cpu::require_host(op, "momentum_buffer", momentum_buffer, momentum_buffer.rank(),
                      "shaped like w, zero before the first step");
    cpu::require_same_shape(op, "momentum_buffer", momentum_buffer, "w", w);
  }

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

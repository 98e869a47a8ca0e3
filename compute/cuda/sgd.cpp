// SGD with momentum, weight decay and Nesterov on the GPU, one fused kernel per parameter
// (as torch.optim.SGD with dampening 0 and the CPU twin).
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

using cuda::fail;

void cuda_backend::sgd_update(tensor& w, const tensor& grad, tensor& momentum_buffer,
                              const sgd_update_params& p) {
  const char* op = "sgd_update";
  require(op, "w", w, w.rank(), "on this GPU");
  require(op, "grad", grad, grad.rank(), "on this GPU");
  cuda::require_same_shape(op, "grad", grad, "w", w);
  if (p.nesterov && p.momentum <= 0.f)
    fail(op, "nesterov needs a positive momentum, got " + std::to_string(p.momentum) +
                 ": set momentum (e.g. 0.9) or turn nesterov off");
  if (p.momentum < 0.f) fail(op, "momentum " + std::to_string(p.momentum) + " must not be negative");
  if (p.momentum != 0.f) {
    require(op, "momentum_buffer", momentum_buffer, momentum_buffer.rank(),
            "shaped like w, zero before the first step");
    cuda::require_same_shape(op, "momentum_buffer", momentum_buffer, "w", w);
  }
  enter();
  // A zero buffer makes the first step buf = g, as PyTorch's buf = clone(g).
  cuda::kernels::sgd_update(w.data(), grad.data(), p.momentum != 0.f ? momentum_buffer.data() : nullptr,
                            w.numel(), p.lr, p.momentum, p.weight_decay, p.grad_scale, p.nesterov, stream());
}

}  // namespace petra

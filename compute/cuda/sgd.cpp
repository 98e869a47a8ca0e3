// SGD with momentum, weight decay and Nesterov on the GPU, one fused kernel per parameter
// (as torch.optim.SGD with dampening 0 and the CPU twin).
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

void cuda_backend::sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                                   const sgd_update_params& p) {
  enter();
  // A zero buffer makes the first step buf = g, as PyTorch's buf = clone(g).
  cuda::kernels::sgd_update(w.data(), grad.data(), p.momentum != 0.f ? momentum_buffer.data() : nullptr,
                            w.numel(), p.lr, p.momentum, p.weight_decay, p.grad_scale, p.nesterov, stream());
}

}  // namespace petra

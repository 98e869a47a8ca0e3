// SGD with momentum, weight decay and Nesterov on the GPU (as torch.optim.SGD with dampening 0 and
// the CPU twin): one fused kernel per parameter (sgd_update), or every parameter of a stage in one
// launch (sgd_step: sgd_kernels.cu), each element computed alike (sgd_math.cuh). AdamW: one kernel
// per parameter (adamw_kernels.cu).
#include <algorithm>
#include <cstring>

#include "compute/cuda/adamw_kernels.hpp"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"
#include "compute/cuda/sgd_kernels.hpp"

namespace petra {

void cuda_backend::sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                                   const sgd_update_params& p) {
  enter();
  // A zero buffer makes the first step buf = g, as PyTorch's buf = clone(g).
  cuda::kernels::sgd_update(w.data(), grad.data(), p.momentum != 0.f ? momentum_buffer.data() : nullptr,
                            w.numel(), p.lr, p.momentum, p.weight_decay, p.grad_scale, p.nesterov, stream());
}

void cuda_backend::sgd_step_impl(const std::vector<sgd_target>& targets, const sgd_update_params& p) {
  enter();
  using cuda::kernels::sgd_chunk;
  using cuda::kernels::sgd_tensor;
  const bool momentum = p.momentum != 0.f;
  std::vector<sgd_tensor> tensors;
  std::vector<sgd_chunk> chunks;
  for (const sgd_target& t : targets) {
    const int64_t count = t.w->numel();
    if (count == 0) continue;
    const auto index = static_cast<int64_t>(tensors.size());
    tensors.push_back({t.w->data(), t.grad->data(), momentum ? t.momentum_buffer->data() : nullptr, count,
                       t.weight_decay, 0.f});
    for (int64_t begin = 0; begin < count; begin += cuda::kernels::sgd_chunk_elements)
      chunks.push_back({index, begin, std::min(count, begin + cuda::kernels::sgd_chunk_elements)});
  }
  if (chunks.empty()) return;
  // The table (tensors, then chunks) goes to the device once and stays while the same parameters
  // come back, step after step; the learning rate and momentum are the launch's arguments.
  const std::size_t tensor_bytes = tensors.size() * sizeof(sgd_tensor);
  const std::size_t bytes = tensor_bytes + chunks.size() * sizeof(sgd_chunk);
  std::vector<char> table(bytes);
  std::memcpy(table.data(), tensors.data(), tensor_bytes);
  std::memcpy(table.data() + tensor_bytes, chunks.data(), bytes - tensor_bytes);
  if (table != sgd_table_bytes_) {
    tensor staging = context_->pinned({static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float))});
    std::memcpy(staging.data(), table.data(), bytes);
    sgd_table_ = context_->allocate(bytes);  // the previous one is freed after the work that reads it
    PETRA_CUDA_CHECK(
        cudaMemcpyAsync(sgd_table_->data(), staging.data(), bytes, cudaMemcpyHostToDevice, stream()));
    context_->track_upload(std::move(staging));
    sgd_table_bytes_ = std::move(table);
  }
  const char* base = static_cast<const char*>(sgd_table_->data());
  cuda::kernels::multi_sgd(
      reinterpret_cast<const sgd_tensor*>(base), reinterpret_cast<const sgd_chunk*>(base + tensor_bytes),
      static_cast<int64_t>(chunks.size()), p.lr, p.momentum, p.grad_scale, p.nesterov, stream());
}

void cuda_backend::adamw_update_impl(tensor& w, const tensor& grad, tensor& m, tensor& v,
                                     const adamw_update_params& p) {
  enter();
  cuda::kernels::adamw_update(w.data(), grad.data(), m.data(), v.data(), w.numel(), adamw_scalars_of(p),
                              p.beta1, p.beta2, p.eps, p.grad_scale, stream());
}

}  // namespace petra

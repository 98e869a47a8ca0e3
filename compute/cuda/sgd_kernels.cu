// The multi-tensor SGD step: one block per chunk of a parameter tensor.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/launch.cuh"
#include "compute/cuda/sgd_kernels.hpp"
#include "compute/cuda/sgd_math.cuh"

namespace petra::cuda::kernels {

namespace {

// Each element is read, stepped and written by one thread, and its gradient zeroed by the same
// thread after it was read: no element is touched by two threads, so the order between blocks
// does not matter and the result is the per-tensor kernel's, bit for bit.
__global__ void multi_sgd_kernel(const sgd_tensor* tensors, const sgd_chunk* chunks, int64_t chunk_count,
                                 float lr, float mu, float scale, bool nesterov) {
  for (int64_t c = blockIdx.x; c < chunk_count; c += gridDim.x) {
    const sgd_chunk chunk = chunks[c];
    const sgd_tensor t = tensors[chunk.tensor];
    if (mu == 0.f) {
      for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
        t.w[i] = sgd_plain_element(t.w[i], t.grad[i], lr, t.weight_decay, scale);
        t.grad[i] = 0.f;
      }
    } else {
      for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
        sgd_momentum_element(t.w[i], t.grad[i], t.buffer[i], lr, mu, t.weight_decay, scale, nesterov);
        t.grad[i] = 0.f;
      }
    }
  }
}

#undef PETRA_GRID_STRIDE

}  // namespace

void multi_sgd(const sgd_tensor* tensors, const sgd_chunk* chunks, int64_t chunk_count, float lr,
               float momentum, float grad_scale, bool nesterov, cudaStream_t stream) {
  if (chunk_count == 0) return;
  const unsigned blocks = static_cast<unsigned>(chunk_count < 65535 * 8 ? chunk_count : 65535 * 8);
  multi_sgd_kernel<<<blocks, threads_per_block, 0, stream>>>(tensors, chunks, chunk_count, lr, momentum,
                                                             grad_scale, nesterov);
  check_launch("multi_sgd");
}

}  // namespace petra::cuda::kernels

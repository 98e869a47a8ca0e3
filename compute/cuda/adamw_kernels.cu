// AdamW on the GPU: one thread per element, each operation rounded on its own (__f*_rn are never
// contracted into an FMA) in the CPU twin's order.
#include "compute/cuda/adamw_kernels.hpp"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/launch.cuh"

namespace petra::cuda::kernels {

namespace {

__global__ void adamw_kernel(float* w, const float* grad, float* m, float* v, int64_t count, adamw_scalars s,
                             float beta1, float beta2, float eps, float scale) {
  PETRA_GRID_STRIDE(i, count) {
    const float g = __fmul_rn(scale, grad[i]);
    const float mi = __fadd_rn(__fmul_rn(beta1, m[i]), __fmul_rn(s.one_minus_beta1, g));
    const float vi = __fadd_rn(__fmul_rn(beta2, v[i]), __fmul_rn(__fmul_rn(s.one_minus_beta2, g), g));
    m[i] = mi;
    v[i] = vi;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), s.bc2_sqrt), eps);
    w[i] = __fsub_rn(__fmul_rn(w[i], s.decay), __fmul_rn(s.step_size, __fdiv_rn(mi, denom)));
  }
}

}  // namespace

void adamw_update(float* w, const float* grad, float* m, float* v, int64_t count, const adamw_scalars& s,
                  float beta1, float beta2, float eps, float grad_scale, cudaStream_t stream) {
  if (count == 0) return;
  adamw_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(w, grad, m, v, count, s, beta1, beta2,
                                                                    eps, grad_scale);
  check_launch("adamw_update");
}

}  // namespace petra::cuda::kernels

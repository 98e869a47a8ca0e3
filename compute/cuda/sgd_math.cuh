// One element of the SGD step, shared by the per-tensor and the multi-tensor kernels so that both
// give the same bits by construction: every operation rounds on its own (__f*_rn are never
// contracted into an FMA), in the CPU twin's order (compute/cpu/sgd.cpp).
#pragma once

namespace petra::cuda::kernels {

/// Without momentum: w − lr·(scale·grad + wd·w).
__device__ __forceinline__ float sgd_plain_element(float w, float grad, float lr, float wd, float scale) {
  const float g = __fadd_rn(__fmul_rn(scale, grad), __fmul_rn(wd, w));
  return __fsub_rn(w, __fmul_rn(lr, g));
}

/// With momentum μ: g = scale·grad + wd·w; buf = μ·buf + g; w −= lr·(nesterov ? g + μ·buf : buf).
__device__ __forceinline__ void sgd_momentum_element(float& w, float grad, float& buffer, float lr, float mu,
                                                     float wd, float scale, bool nesterov) {
  const float g = __fadd_rn(__fmul_rn(scale, grad), __fmul_rn(wd, w));
  const float b = __fadd_rn(__fmul_rn(mu, buffer), g);
  buffer = b;
  w = __fsub_rn(w, __fmul_rn(lr, nesterov ? __fadd_rn(g, __fmul_rn(mu, b)) : b));
}

}  // namespace petra::cuda::kernels

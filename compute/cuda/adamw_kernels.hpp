// The AdamW step of one parameter tensor on the GPU (adamw_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "compute/adamw_scalars.hpp"

namespace petra::cuda::kernels {

/// For each of `count` elements: w ·= decay; g = scale·grad; m = β1·m + (1 − β1)·g;
/// v = β2·v + (1 − β2)·g²; w −= step_size · m / (√v / bc2_sqrt + eps) (compute/cpu/adamw.cpp's order).
void adamw_update(float* w, const float* grad, float* m, float* v, int64_t count, const adamw_scalars& s,
                  float beta1, float beta2, float eps, float grad_scale, cudaStream_t stream);

}  // namespace petra::cuda::kernels

// Launchers of the backend's own kernels (kernels.cu): each enqueues on `stream` and checks
// its launch. Pointers are device pointers; extents are element counts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace petra::cuda::kernels {

// --- pointwise -------------------------------------------------------------
/// out[0, count) ← the first values of the standard normal stream `key` (compute/gaussian.hpp).
void gaussian(float* out, int64_t count, uint64_t key, cudaStream_t stream);
/// y = max(x, 0).
void relu_forward(const float* x, float* y, int64_t count, cudaStream_t stream);
/// dx = dy · [y > 0].
void relu_backward(const float* y, const float* dy, float* dx, int64_t count, cudaStream_t stream);
/// out = a + b (out may alias a).
void add(const float* a, const float* b, float* out, int64_t count, cudaStream_t stream);
/// out = a − b.
void sub(const float* a, const float* b, float* out, int64_t count, cudaStream_t stream);

/// out = x rounded to the nearest bf16 (ties to even; NaN stays NaN), kept as fp32.
void round_to_bf16(const float* x, float* out, int64_t count, cudaStream_t stream);

// --- pooling over `planes` planes of h×w -------------------------------------
/// 2×2 stride 2; the first maximum of each window in row-major order (as the CPU twin).
void max_pool2x2_forward(const float* x, float* y, int64_t planes, int64_t h, int64_t w, cudaStream_t stream);
/// dx: dy at the window's first maximum, 0 elsewhere.
void max_pool2x2_backward(const float* x, const float* dy, float* dx, int64_t planes, int64_t h, int64_t w,
                          cudaStream_t stream);
/// Forward mode: y_dot = x_dot at the window's first maximum of x (the transpose of the backward).
void max_pool2x2_jvp(const float* x, const float* x_dot, float* y_dot, int64_t planes, int64_t h, int64_t w,
                     cudaStream_t stream);
/// y[plane] = mean of the plane (double accumulation).
void global_avg_pool_forward(const float* x, float* y, int64_t planes, int64_t area, cudaStream_t stream);
/// dx[plane, i] = dy[plane] / area.
void global_avg_pool_backward(const float* dy, float* dx, int64_t planes, int64_t area, cudaStream_t stream);

// --- linear helpers on a row-major (rows, cols) matrix ----------------------
/// y[i, j] = b[j].
void broadcast_rows(const float* b, float* y, int64_t rows, int64_t cols, cudaStream_t stream);
/// db[j] += Σ_i dy[i, j], rows summed in order.
void add_column_sums(const float* dy, float* db, int64_t rows, int64_t cols, cudaStream_t stream);

// (A convolution's bias gradient: channel_sums.hpp.)

// --- loss ----------------------------------------------------------------------
/// Per row i of logits (n, k): row_loss[i] = logsumexp − logit[label], row_hit[i] = [argmax = label]
/// (first maximum); dlogits (if not null) = (softmax − onehot)/n. Double arithmetic as the CPU twin.
void softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t n, int64_t k, float* dlogits,
                           double* row_loss, int32_t* row_hit, cudaStream_t stream);

/// *sum = Σ_i row_loss[i] in row order from 0 (double), *hits = Σ_i row_hit[i]: one thread, so
/// the sum has the bits of the host loop over the same rows.
void loss_totals(const double* row_loss, const int32_t* row_hit, int64_t n, double* sum, int64_t* hits,
                 cudaStream_t stream);

// --- batch norm ----------------------------------------------------------------
/// running ← (1 − m)·running + m·batch, the variance unbiased from the saved 1/sqrt(σ²_B + eps)
/// with `count` values per channel (as PyTorch).
void batch_norm_update_running(const float* mean, const float* inv_std, float* running_mean,
                               float* running_var, int64_t channels, int64_t count, float eps, float momentum,
                               cudaStream_t stream);

// --- optimizer -----------------------------------------------------------------
/// g = scale·grad + wd·w; with momentum: buf = μ·buf + g, step = nesterov ? g + μ·buf : buf;
/// without (μ = 0, buffer unused): step = g. w −= lr·step.
void sgd_update(float* w, const float* grad, float* buffer, int64_t count, float lr, float momentum,
                float weight_decay, float grad_scale, bool nesterov, cudaStream_t stream);

}  // namespace petra::cuda::kernels

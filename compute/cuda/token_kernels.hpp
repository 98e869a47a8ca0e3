// Launchers of the token ops' kernels (token_kernels.cu): layer norm, GELU, softmax, the token
// mean, the scale and the swap of axes 1 and 2. Each enqueues on `stream` and checks its launch; pointers are
// device pointers. A row (a token's C features, a softmax's last axis) goes to one warp, its sums in double
// as the CPU twin's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace petra::cuda::kernels {

/// Per token of x (tokens, c): mean, inv_std = 1/sqrt(σ² + eps) (biased), y = (x − mean)·inv_std·γ + β.
void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                        float* inv_std, int64_t tokens, int64_t c, float eps, cudaStream_t stream);
/// Per token: out = w_after·inv_std·(u − mean(u) − x̂·mean(u·x̂)), u = w_before·v; a null weight is 1.
/// The backward's dx is (w_before = γ, v = dy); the tangent J ẋ is (v = ẋ, w_after = γ).
void layer_norm_project(const float* x, const float* v, const float* w_before, const float* w_after,
                        const float* mean, const float* inv_std, float* out, int64_t tokens, int64_t c,
                        cudaStream_t stream);
/// dγ[i] += Σ_t dy·x̂, dβ[i] += Σ_t dy, the tokens in order per feature.
void layer_norm_parameter_gradients(const float* x, const float* dy, const float* mean, const float* inv_std,
                                    float* dgamma, float* dbeta, int64_t tokens, int64_t c,
                                    cudaStream_t stream);

/// y = x·Φ(x) (erf form); dx = dy·(Φ(x) + x·φ(x)).
void gelu_forward(const float* x, float* y, int64_t count, cudaStream_t stream);
void gelu_backward(const float* x, const float* dy, float* dx, int64_t count, cudaStream_t stream);

/// Softmax over each row of k values; its backward from the output: dx = y·(dy − Σ dy·y).
void softmax_forward(const float* x, float* y, int64_t rows, int64_t k, cudaStream_t stream);
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t k,
                      cudaStream_t stream);

/// y[n, c] = mean over t of x[n, t, c] (double sum); dx[n, t, c] = dy[n, c]/t.
void token_mean_forward(const float* x, float* y, int64_t n, int64_t t, int64_t c, cudaStream_t stream);
void token_mean_backward(const float* dy, float* dx, int64_t n, int64_t t, int64_t c, cudaStream_t stream);

/// y = alpha·x, elementwise.
void scale(const float* x, float* y, int64_t count, float alpha, cudaStream_t stream);
/// y[n, j, i, k] = x[n, i, j, k] for x (n, a, b, c), y (n, b, a, c).
void transpose12(const float* x, float* y, int64_t n, int64_t a, int64_t b, int64_t c, cudaStream_t stream);

}  // namespace petra::cuda::kernels

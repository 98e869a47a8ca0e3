// The token ops' kernels, each the CPU twin's arithmetic (compute/cpu/layer_norm.cpp, tokens.cpp)
// with its sums in another order: a warp per row, lanes striding over the row (coalesced), sums in
// double reduced by a butterfly so that every lane holds the same bits.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/launch.cuh"
#include "compute/cuda/token_kernels.hpp"

namespace petra::cuda::kernels {

namespace {

constexpr int warp = 32;
constexpr double inv_sqrt2 = 0.70710678118654752440;
constexpr double inv_sqrt_2pi = 0.39894228040143267794;

__device__ double warp_sum(double v) {
  for (int offset = warp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ float warp_max(float v) {
  for (int offset = warp / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Blocks for one warp per row (the kernels stride over the rest, whole warps together).
unsigned blocks_for_rows(int64_t rows) { return blocks_for(rows * warp); }

// Every lane of a warp walks the same rows, so the shuffles see full warps.
#define PETRA_WARP_ROWS(row, rows)                                                                       \
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / warp; row < (rows); \
       row += static_cast<int64_t>(gridDim.x) * blockDim.x / warp)

__global__ void layer_norm_forward_kernel(const float* x, const float* gamma, const float* beta, float* y,
                                          float* mean_out, float* inv_std_out, int64_t tokens, int64_t c,
                                          float eps) {
  const int lane = threadIdx.x % warp;
  PETRA_WARP_ROWS(t, tokens) {
    const float* row = x + t * c;
    double sum = 0;
    for (int64_t i = lane; i < c; i += warp) sum += row[i];
    const double mean = warp_sum(sum) / static_cast<double>(c);
    double squares = 0;  // two passes, as the CPU
    for (int64_t i = lane; i < c; i += warp) squares += (row[i] - mean) * (row[i] - mean);
    const double inv_std = 1.0 / sqrt(warp_sum(squares) / static_cast<double>(c) + eps);
    const float m = static_cast<float>(mean), s = static_cast<float>(inv_std);
    if (lane == 0) {
      mean_out[t] = m;
      inv_std_out[t] = s;
    }
    for (int64_t i = lane; i < c; i += warp) y[t * c + i] = (row[i] - m) * s * gamma[i] + beta[i];
  }
}

__global__ void layer_norm_project_kernel(const float* x, const float* v, const float* w_before,
                                          const float* w_after, const float* mean, const float* inv_std,
                                          float* out, int64_t tokens, int64_t c) {
  const int lane = threadIdx.x % warp;
  PETRA_WARP_ROWS(t, tokens) {
    const float* row = x + t * c;
    const float* in = v + t * c;
    const double m = mean[t], s = inv_std[t];
    double sum = 0, sum_xhat = 0;
    for (int64_t i = lane; i < c; i += warp) {
      const double u = w_before ? static_cast<double>(w_before[i]) * in[i] : in[i];
      sum += u;
      sum_xhat += u * ((row[i] - m) * s);
    }
    const double mean_u = warp_sum(sum) / static_cast<double>(c);
    const double mean_u_xhat = warp_sum(sum_xhat) / static_cast<double>(c);
    for (int64_t i = lane; i < c; i += warp) {
      const double u = w_before ? static_cast<double>(w_before[i]) * in[i] : in[i];
      const float projected = static_cast<float>(s * (u - mean_u - (row[i] - m) * s * mean_u_xhat));
      out[t * c + i] = w_after ? projected * w_after[i] : projected;
    }
  }
}

__global__ void layer_norm_parameter_gradients_kernel(const float* x, const float* dy, const float* mean,
                                                      const float* inv_std, float* dgamma, float* dbeta,
                                                      int64_t tokens, int64_t c) {
  PETRA_GRID_STRIDE(i, c) {
    double sum_g = 0, sum_b = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const float xhat = (x[t * c + i] - mean[t]) * inv_std[t];
      sum_g += static_cast<double>(dy[t * c + i]) * xhat;
      sum_b += dy[t * c + i];
    }
    dgamma[i] += static_cast<float>(sum_g);
    dbeta[i] += static_cast<float>(sum_b);
  }
}

__global__ void gelu_forward_kernel(const float* x, float* y, int64_t count) {
  PETRA_GRID_STRIDE(i, count) {
    const double v = x[i];
    y[i] = static_cast<float>(0.5 * v * (1.0 + erf(v * inv_sqrt2)));
  }
}

__global__ void gelu_backward_kernel(const float* x, const float* dy, float* dx, int64_t count) {
  PETRA_GRID_STRIDE(i, count) {
    const double v = x[i];
    const double cdf = 0.5 * (1.0 + erf(v * inv_sqrt2)), pdf = inv_sqrt_2pi * exp(-0.5 * v * v);
    dx[i] = static_cast<float>(dy[i] * (cdf + v * pdf));
  }
}

__global__ void softmax_forward_kernel(const float* x, float* y, int64_t rows, int64_t k) {
  const int lane = threadIdx.x % warp;
  PETRA_WARP_ROWS(r, rows) {
    const float* row = x + r * k;
    float top = row[0];
    for (int64_t j = lane; j < k; j += warp) top = fmaxf(top, row[j]);
    top = warp_max(top);
    double sum = 0;
    for (int64_t j = lane; j < k; j += warp) sum += exp(static_cast<double>(row[j]) - top);
    sum = warp_sum(sum);
    for (int64_t j = lane; j < k; j += warp)
      y[r * k + j] = static_cast<float>(exp(static_cast<double>(row[j]) - top) / sum);
  }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int64_t rows, int64_t k) {
  const int lane = threadIdx.x % warp;
  PETRA_WARP_ROWS(r, rows) {
    double dot = 0;
    for (int64_t j = lane; j < k; j += warp) dot += static_cast<double>(dy[r * k + j]) * y[r * k + j];
    dot = warp_sum(dot);
    for (int64_t j = lane; j < k; j += warp)
      dx[r * k + j] = static_cast<float>(y[r * k + j] * (dy[r * k + j] - dot));
  }
}

__global__ void token_mean_forward_kernel(const float* x, float* y, int64_t n, int64_t t, int64_t c) {
  PETRA_GRID_STRIDE(nc, n * c) {
    const float* column = x + (nc / c) * t * c + nc % c;
    double sum = 0;
    for (int64_t token = 0; token < t; ++token) sum += column[token * c];
    y[nc] = static_cast<float>(sum / static_cast<double>(t));
  }
}

__global__ void token_mean_backward_kernel(const float* dy, float* dx, int64_t n, int64_t t, int64_t c) {
  const float scale = 1.f / static_cast<float>(t);
  PETRA_GRID_STRIDE(i, n * t * c) dx[i] = dy[(i / (t * c)) * c + i % c] * scale;
}

__global__ void scale_kernel(const float* x, float* y, int64_t count, float alpha) {
  PETRA_GRID_STRIDE(i, count) y[i] = alpha * x[i];
}

// One thread per output value, consecutive threads on consecutive values of a row (coalesced writes).
__global__ void transpose12_kernel(const float* x, float* y, int64_t n, int64_t a, int64_t b, int64_t c) {
  PETRA_GRID_STRIDE(o, n * a * b * c) {
    const int64_t k = o % c, row = o / c;
    const int64_t i = row % a, j = (row / a) % b, item = row / (a * b);
    y[o] = x[((item * a + i) * b + j) * c + k];
  }
}

#undef PETRA_WARP_ROWS

}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                        float* inv_std, int64_t tokens, int64_t c, float eps, cudaStream_t stream) {
  if (tokens == 0) return;
  layer_norm_forward_kernel<<<blocks_for_rows(tokens), threads_per_block, 0, stream>>>(
      x, gamma, beta, y, mean, inv_std, tokens, c, eps);
  check_launch("layer_norm_forward");
}

void layer_norm_project(const float* x, const float* v, const float* w_before, const float* w_after,
                        const float* mean, const float* inv_std, float* out, int64_t tokens, int64_t c,
                        cudaStream_t stream) {
  if (tokens == 0) return;
  layer_norm_project_kernel<<<blocks_for_rows(tokens), threads_per_block, 0, stream>>>(
      x, v, w_before, w_after, mean, inv_std, out, tokens, c);
  check_launch("layer_norm_project");
}

void layer_norm_parameter_gradients(const float* x, const float* dy, const float* mean, const float* inv_std,
                                    float* dgamma, float* dbeta, int64_t tokens, int64_t c,
                                    cudaStream_t stream) {
  if (c == 0) return;
  layer_norm_parameter_gradients_kernel<<<blocks_for(c), threads_per_block, 0, stream>>>(
      x, dy, mean, inv_std, dgamma, dbeta, tokens, c);
  check_launch("layer_norm_parameter_gradients");
}

void gelu_forward(const float* x, float* y, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  gelu_forward_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(x, y, count);
  check_launch("gelu_forward");
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  gelu_backward_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(x, dy, dx, count);
  check_launch("gelu_backward");
}

void softmax_forward(const float* x, float* y, int64_t rows, int64_t k, cudaStream_t stream) {
  if (rows == 0) return;
  softmax_forward_kernel<<<blocks_for_rows(rows), threads_per_block, 0, stream>>>(x, y, rows, k);
  check_launch("softmax_forward");
}

void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t k,
                      cudaStream_t stream) {
  if (rows == 0) return;
  softmax_backward_kernel<<<blocks_for_rows(rows), threads_per_block, 0, stream>>>(y, dy, dx, rows, k);
  check_launch("softmax_backward");
}

void token_mean_forward(const float* x, float* y, int64_t n, int64_t t, int64_t c, cudaStream_t stream) {
  if (n * c == 0) return;
  token_mean_forward_kernel<<<blocks_for(n * c), threads_per_block, 0, stream>>>(x, y, n, t, c);
  check_launch("token_mean_forward");
}

void token_mean_backward(const float* dy, float* dx, int64_t n, int64_t t, int64_t c, cudaStream_t stream) {
  if (n * t * c == 0) return;
  token_mean_backward_kernel<<<blocks_for(n * t * c), threads_per_block, 0, stream>>>(dy, dx, n, t, c);
  check_launch("token_mean_backward");
}

void scale(const float* x, float* y, int64_t count, float alpha, cudaStream_t stream) {
  if (count == 0) return;
  scale_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(x, y, count, alpha);
  check_launch("scale");
}

void transpose12(const float* x, float* y, int64_t n, int64_t a, int64_t b, int64_t c, cudaStream_t stream) {
  if (n * a * b * c == 0) return;
  transpose12_kernel<<<blocks_for(n * a * b * c), threads_per_block, 0, stream>>>(x, y, n, a, b, c);
  check_launch("transpose12");
}

}  // namespace petra::cuda::kernels

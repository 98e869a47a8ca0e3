// The backend's own kernels: elementwise ops, pooling, linear helpers, softmax cross-entropy,
// the batch-norm running-statistics update and the fused SGD step. Each mirrors its CPU twin
// in compute/cpu/ operation for operation.
#include "compute/cuda/bf16_bits.cuh"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/kernels.hpp"
#include "compute/cuda/launch.cuh"
#include "compute/cuda/sgd_math.cuh"
#include "compute/gaussian.hpp"

namespace petra::cuda::kernels {

namespace {

__global__ void gaussian_kernel(float* out, int64_t count, uint64_t key) {
  PETRA_GRID_STRIDE(k, (count + 1) / 2) {
    float first, second;
    gaussian_pair(key, k, first, second);
    out[2 * k] = first;
    if (2 * k + 1 < count) out[2 * k + 1] = second;
  }
}

__global__ void relu_forward_kernel(const float* x, float* y, int64_t count) {
  PETRA_GRID_STRIDE(i, count) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, int64_t count) {
  PETRA_GRID_STRIDE(i, count) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t count) {
  PETRA_GRID_STRIDE(i, count) out[i] = a[i] + b[i];
}

__global__ void sub_kernel(const float* a, const float* b, float* out, int64_t count) {
  PETRA_GRID_STRIDE(i, count) out[i] = a[i] - b[i];
}

// The CPU twin of round_to_bf16 (compute/precision.hpp), bit for bit.
__global__ void round_to_bf16_kernel(const float* x, float* out, int64_t count) {
  PETRA_GRID_STRIDE(i, count) out[i] = __uint_as_float(bf16_bits_of(x[i]));
}

/// Offset of the first maximum of the 2×2 window at `top_left`: 0, 1, w or w + 1.
__device__ int64_t argmax_2x2(const float* top_left, int64_t w) {
  int64_t best = 0;
  const int64_t offsets[3] = {1, w, w + 1};
  for (int o = 0; o < 3; ++o)
    if (top_left[offsets[o]] > top_left[best]) best = offsets[o];
  return best;
}

__global__ void max_pool2x2_forward_kernel(const float* x, float* y, int64_t planes, int64_t h, int64_t w) {
  const int64_t ho = h / 2, wo = w / 2;
  PETRA_GRID_STRIDE(o, planes * ho * wo) {
    const int64_t plane = o / (ho * wo), i = (o / wo) % ho, j = o % wo;
    const float* top_left = x + plane * h * w + 2 * i * w + 2 * j;
    y[o] = top_left[argmax_2x2(top_left, w)];
  }
}

__global__ void max_pool2x2_backward_kernel(const float* x, const float* dy, float* dx, int64_t planes,
                                            int64_t h, int64_t w) {
  const int64_t ho = h / 2, wo = w / 2;
  PETRA_GRID_STRIDE(o, planes * ho * wo) {
    const int64_t plane = o / (ho * wo), i = (o / wo) % ho, j = o % wo;
    const int64_t top = plane * h * w + 2 * i * w + 2 * j;
    const int64_t best = argmax_2x2(x + top, w);
    dx[top] = best == 0 ? dy[o] : 0.f;
    dx[top + 1] = best == 1 ? dy[o] : 0.f;
    dx[top + w] = best == w ? dy[o] : 0.f;
    dx[top + w + 1] = best == w + 1 ? dy[o] : 0.f;
  }
}

__global__ void max_pool2x2_jvp_kernel(const float* x, const float* x_dot, float* y_dot, int64_t planes,
                                       int64_t h, int64_t w) {
  const int64_t ho = h / 2, wo = w / 2;
  PETRA_GRID_STRIDE(o, planes * ho * wo) {
    const int64_t plane = o / (ho * wo), i = (o / wo) % ho, j = o % wo;
    const int64_t top = plane * h * w + 2 * i * w + 2 * j;
    y_dot[o] = x_dot[top + argmax_2x2(x + top, w)];
  }
}

__global__ void global_avg_pool_forward_kernel(const float* x, float* y, int64_t planes, int64_t area) {
  PETRA_GRID_STRIDE(plane, planes) {
    double sum = 0;
    const float* p = x + plane * area;
    for (int64_t i = 0; i < area; ++i) sum += p[i];
    y[plane] = static_cast<float>(sum / static_cast<double>(area));
  }
}

__global__ void global_avg_pool_backward_kernel(const float* dy, float* dx, int64_t planes, int64_t area) {
  const float scale = 1.f / static_cast<float>(area);
  PETRA_GRID_STRIDE(i, planes * area) dx[i] = dy[i / area] * scale;
}

__global__ void broadcast_rows_kernel(const float* b, float* y, int64_t rows, int64_t cols) {
  PETRA_GRID_STRIDE(i, rows * cols) y[i] = b[i % cols];
}

__global__ void add_column_sums_kernel(const float* dy, float* db, int64_t rows, int64_t cols) {
  PETRA_GRID_STRIDE(j, cols) {
    float sum = db[j];
    for (int64_t i = 0; i < rows; ++i) sum += dy[i * cols + j];
    db[j] = sum;
  }
}

__global__ void softmax_cross_entropy_kernel(const float* logits, const int32_t* labels, int64_t n, int64_t k,
                                             float* dlogits, double* row_loss, int32_t* row_hit) {
  PETRA_GRID_STRIDE(i, n) {
    const float* row = logits + i * k;
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j)
      if (row[j] > row[best]) best = j;
    const double top = row[best];  // subtracting the max keeps exp() ≤ 1
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += exp(row[j] - top);
    const double log_sum = log(sum);
    const int32_t label = labels[i];
    row_loss[i] = log_sum - (row[label] - top);
    row_hit[i] = best == label;
    if (dlogits) {
      float* grad = dlogits + i * k;
      for (int64_t j = 0; j < k; ++j)
        grad[j] = static_cast<float>((exp(row[j] - top - log_sum) - (j == label ? 1.0 : 0.0)) / n);
    }
  }
}

__global__ void loss_totals_kernel(const double* row_loss, const int32_t* row_hit, int64_t n, double* sum,
                                   int64_t* hits) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double s = 0;
  int64_t h = 0;
  for (int64_t i = 0; i < n; ++i) {
    s += row_loss[i];
    h += row_hit[i];
  }
  *sum = s;
  *hits = h;
}

__global__ void batch_norm_update_running_kernel(const float* mean, const float* inv_std, float* running_mean,
                                                 float* running_var, int64_t channels, double bessel,
                                                 float eps, float momentum) {
  PETRA_GRID_STRIDE(c, channels) {
    const double s = inv_std[c];
    const double biased_var = fmax(0.0, 1.0 / (s * s) - eps);
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean[c]);
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] + momentum * biased_var * bessel);
  }
}

__global__ void sgd_plain_kernel(float* w, const float* grad, int64_t count, float lr, float wd,
                                 float scale) {
  PETRA_GRID_STRIDE(i, count) w[i] = sgd_plain_element(w[i], grad[i], lr, wd, scale);
}

__global__ void sgd_momentum_kernel(float* w, const float* grad, float* buffer, int64_t count, float lr,
                                    float mu, float wd, float scale, bool nesterov) {
  PETRA_GRID_STRIDE(i, count) sgd_momentum_element(w[i], grad[i], buffer[i], lr, mu, wd, scale, nesterov);
}

#undef PETRA_GRID_STRIDE

}  // namespace

void gaussian(float* out, int64_t count, uint64_t key, cudaStream_t stream) {
  if (count == 0) return;
  gaussian_kernel<<<blocks_for((count + 1) / 2), threads_per_block, 0, stream>>>(out, count, key);
  check_launch("gaussian");
}

void relu_forward(const float* x, float* y, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  relu_forward_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(x, y, count);
  check_launch("relu_forward");
}

void round_to_bf16(const float* x, float* out, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  round_to_bf16_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(x, out, count);
  check_launch("round_to_bf16");
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  relu_backward_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(y, dy, dx, count);
  check_launch("relu_backward");
}

void add(const float* a, const float* b, float* out, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  add_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(a, b, out, count);
  check_launch("add");
}

void sub(const float* a, const float* b, float* out, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  sub_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(a, b, out, count);
  check_launch("sub");
}

void max_pool2x2_forward(const float* x, float* y, int64_t planes, int64_t h, int64_t w,
                         cudaStream_t stream) {
  const int64_t outputs = planes * (h / 2) * (w / 2);
  if (outputs == 0) return;
  max_pool2x2_forward_kernel<<<blocks_for(outputs), threads_per_block, 0, stream>>>(x, y, planes, h, w);
  check_launch("max_pool2x2_forward");
}

void max_pool2x2_backward(const float* x, const float* dy, float* dx, int64_t planes, int64_t h, int64_t w,
                          cudaStream_t stream) {
  const int64_t outputs = planes * (h / 2) * (w / 2);
  if (outputs == 0) return;
  max_pool2x2_backward_kernel<<<blocks_for(outputs), threads_per_block, 0, stream>>>(x, dy, dx, planes, h, w);
  check_launch("max_pool2x2_backward");
}

void max_pool2x2_jvp(const float* x, const float* x_dot, float* y_dot, int64_t planes, int64_t h, int64_t w,
                     cudaStream_t stream) {
  const int64_t outputs = planes * (h / 2) * (w / 2);
  if (outputs == 0) return;
  max_pool2x2_jvp_kernel<<<blocks_for(outputs), threads_per_block, 0, stream>>>(x, x_dot, y_dot, planes, h,
                                                                                w);
  check_launch("max_pool2x2_jvp");
}

void global_avg_pool_forward(const float* x, float* y, int64_t planes, int64_t area, cudaStream_t stream) {
  if (planes == 0) return;
  global_avg_pool_forward_kernel<<<blocks_for(planes), threads_per_block, 0, stream>>>(x, y, planes, area);
  check_launch("global_avg_pool_forward");
}

void global_avg_pool_backward(const float* dy, float* dx, int64_t planes, int64_t area, cudaStream_t stream) {
  if (planes * area == 0) return;
  global_avg_pool_backward_kernel<<<blocks_for(planes * area), threads_per_block, 0, stream>>>(dy, dx, planes,
                                                                                               area);
  check_launch("global_avg_pool_backward");
}

void broadcast_rows(const float* b, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  broadcast_rows_kernel<<<blocks_for(rows * cols), threads_per_block, 0, stream>>>(b, y, rows, cols);
  check_launch("broadcast_rows");
}

void add_column_sums(const float* dy, float* db, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (cols == 0) return;
  add_column_sums_kernel<<<blocks_for(cols), threads_per_block, 0, stream>>>(dy, db, rows, cols);
  check_launch("add_column_sums");
}

void softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t n, int64_t k, float* dlogits,
                           double* row_loss, int32_t* row_hit, cudaStream_t stream) {
  if (n == 0) return;
  softmax_cross_entropy_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(logits, labels, n, k, dlogits,
                                                                                row_loss, row_hit);
  check_launch("softmax_cross_entropy");
}

void loss_totals(const double* row_loss, const int32_t* row_hit, int64_t n, double* sum, int64_t* hits,
                 cudaStream_t stream) {
  loss_totals_kernel<<<1, 1, 0, stream>>>(row_loss, row_hit, n, sum, hits);
  check_launch("loss_totals");
}

void batch_norm_update_running(const float* mean, const float* inv_std, float* running_mean,
                               float* running_var, int64_t channels, int64_t count, float eps, float momentum,
                               cudaStream_t stream) {
  if (channels == 0) return;
  const double bessel = static_cast<double>(count) / static_cast<double>(count - 1);
  batch_norm_update_running_kernel<<<blocks_for(channels), threads_per_block, 0, stream>>>(
      mean, inv_std, running_mean, running_var, channels, bessel, eps, momentum);
  check_launch("batch_norm_update_running");
}

void sgd_update(float* w, const float* grad, float* buffer, int64_t count, float lr, float momentum,
                float weight_decay, float grad_scale, bool nesterov, cudaStream_t stream) {
  if (count == 0) return;
  if (momentum == 0.f) {
    sgd_plain_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(w, grad, count, lr, weight_decay,
                                                                          grad_scale);
    check_launch("sgd_update (plain)");
    return;
  }
  sgd_momentum_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(
      w, grad, buffer, count, lr, momentum, weight_decay, grad_scale, nesterov);
  check_launch("sgd_update (momentum)");
}

}  // namespace petra::cuda::kernels

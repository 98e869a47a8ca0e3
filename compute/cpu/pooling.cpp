// Pooling: 2×2 stride-2 max pool (forward, backward) and global average pool.
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

namespace {

/// Offset within the 2×2 window at (row 2i, column 2j) of the first maximum
/// (row-major scan, as PyTorch): 0, 1, W or W + 1.
inline int64_t argmax_2x2(const float* top_left, int64_t width) {
  int64_t best = 0;
  const int64_t offsets[3] = {1, width, width + 1};
  for (int64_t o : offsets)
    if (top_left[o] > top_left[best]) best = o;
  return best;
}

}  // namespace

tensor cpu_backend::max_pool2x2_forward_impl(const tensor& x) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  tensor y = output({x.dim(0), x.dim(1), h / 2, w / 2});
  const float* in = x.data();
  float* out = y.data();
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t i = 0; i < h / 2; ++i) {
      const float* row = in + plane * h * w + 2 * i * w;
      float* dst = out + plane * (h / 2) * (w / 2) + i * (w / 2);
      for (int64_t j = 0; j < w / 2; ++j) dst[j] = row[2 * j + argmax_2x2(row + 2 * j, w)];
    }
  }
  return y;
}

tensor cpu_backend::max_pool2x2_backward_impl(const tensor& x, const tensor& dy) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  tensor dx = output(x.shape());
  const float *in = x.data(), *grad = dy.data();
  float* out = dx.data();
  // The gradient goes to the window's first maximum, the one the forward picked.
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t i = 0; i < h / 2; ++i) {
      const int64_t top = plane * h * w + 2 * i * w;
      float* dst = out + top;
      for (int64_t j = 0; j < w; ++j) dst[j] = dst[w + j] = 0.f;
      const float* g = grad + plane * (h / 2) * (w / 2) + i * (w / 2);
      for (int64_t j = 0; j < w / 2; ++j) dst[2 * j + argmax_2x2(in + top + 2 * j, w)] = g[j];
    }
  }
  return dx;
}

tensor cpu_backend::global_avg_pool_forward_impl(const tensor& x) {
  const int64_t planes = x.dim(0) * x.dim(1), area = x.dim(2) * x.dim(3);
  tensor y = output({x.dim(0), x.dim(1)});
  const float* in = x.data();
  float* out = y.data();
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    double sum = 0;
    const float* p = in + plane * area;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < area; ++i) sum += p[i];
    out[plane] = static_cast<float>(sum / static_cast<double>(area));
  }
  return y;
}

tensor cpu_backend::global_avg_pool_backward_impl(const tensor& dy, const shape_t& x_shape) {
  const int64_t planes = x_shape[0] * x_shape[1], area = x_shape[2] * x_shape[3];
  tensor dx = output(x_shape);
  const float* grad = dy.data();
  float* out = dx.data();
  const float scale = 1.f / static_cast<float>(area);
#pragma omp parallel for num_threads(cpu::team_for(dx.numel(), threads_)) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float value = grad[plane] * scale;
    float* p = out + plane * area;
    for (int64_t i = 0; i < area; ++i) p[i] = value;
  }
  return dx;
}

}  // namespace petra

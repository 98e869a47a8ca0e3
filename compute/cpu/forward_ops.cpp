// Forward-mode ops with no composition of other ops: the 2×2 max pool's tangent.
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

namespace {

/// Offset of the window's first maximum in row-major order: 0, 1, W or W + 1. It must pick the
/// maximum that max_pool2x2_forward and _backward pick (pooling.cpp), or the tangent would not be
/// the derivative of that forward.
inline int64_t first_max_offset(const float* top_left, int64_t width) {
  int64_t best = 0;
  for (int64_t o : {int64_t{1}, width, width + 1})
    if (top_left[o] > top_left[best]) best = o;
  return best;
}

}  // namespace

tensor cpu_backend::max_pool2x2_jvp_impl(const tensor& x, const tensor& x_dot) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  tensor y_dot = output({x.dim(0), x.dim(1), h / 2, w / 2});
  const float *in = x.data(), *tangent = x_dot.data();
  float* out = y_dot.data();
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t i = 0; i < h / 2; ++i) {
      const int64_t top = plane * h * w + 2 * i * w;
      float* dst = out + plane * (h / 2) * (w / 2) + i * (w / 2);
      for (int64_t j = 0; j < w / 2; ++j)
        dst[j] = tangent[top + 2 * j + first_max_offset(in + top + 2 * j, w)];
    }
  }
  return y_dot;
}

}  // namespace petra

// Elementwise ops: ReLU forward/backward, add, sub, add_inplace.
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

namespace {

/// out[i] = f(a[i], b[i]) on the backend's threads when the tensor is large.
template <typename F>
void zip(const float* a, const float* b, float* out, int64_t count, int threads, F f) {
#pragma omp parallel for simd num_threads(cpu::team_for(count, threads)) schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = f(a[i], b[i]);
}

}  // namespace

tensor cpu_backend::relu_forward_impl(const tensor& x) {
  tensor y = output(x.shape());
  const float* in = x.data();
  float* out = y.data();
  const int64_t count = x.numel();
#pragma omp parallel for simd num_threads(cpu::team_for(count, threads_)) schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
  return y;
}

tensor cpu_backend::relu_backward_impl(const tensor& y, const tensor& dy) {
  tensor dx = output(y.shape());
  zip(y.data(), dy.data(), dx.data(), y.numel(), threads_,
      [](float out, float g) { return out > 0.f ? g : 0.f; });
  return dx;
}

tensor cpu_backend::add_impl(const tensor& a, const tensor& b) {
  tensor sum = output(a.shape());
  zip(a.data(), b.data(), sum.data(), a.numel(), threads_, [](float u, float v) { return u + v; });
  return sum;
}

tensor cpu_backend::sub_impl(const tensor& a, const tensor& b) {
  tensor difference = output(a.shape());
  zip(a.data(), b.data(), difference.data(), a.numel(), threads_, [](float u, float v) { return u - v; });
  return difference;
}

void cpu_backend::add_inplace_impl(tensor& a, const tensor& b) {
  forget_staged_dy();
  zip(a.data(), b.data(), a.data(), a.numel(), threads_, [](float u, float v) { return u + v; });
}

}  // namespace petra

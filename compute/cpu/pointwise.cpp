// Elementwise ops: ReLU forward/backward, add, sub, add_inplace.
#include "compute/cpu/checks.hpp"
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

void require_pair(const char* op, const char* name_a, const tensor& a, const char* name_b, const tensor& b) {
  cpu::require_host(op, name_a, a, a.rank(), "on the host");
  cpu::require_host(op, name_b, b, b.rank(), "on the host");
  cpu::require_same_shape(op, name_a, a, name_b, b);
}

}  // namespace

tensor cpu_backend::relu_forward(const tensor& x) {
  cpu::require_host("relu_forward", "x", x, x.rank(), "on the host");
  tensor y = output(x.shape());
  const float* in = x.data();
  float* out = y.data();
  const int64_t count = x.numel();
#pragma omp parallel for simd num_threads(cpu::team_for(count, threads_)) schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
  return y;
}

tensor cpu_backend::relu_backward(const tensor& y, const tensor& dy) {
  require_pair("relu_backward", "y", y, "dy", dy);
  tensor dx = output(y.shape());
  zip(y.data(), dy.data(), dx.data(), y.numel(), threads_,
      [](float out, float g) { return out > 0.f ? g : 0.f; });
  return dx;
}

tensor cpu_backend::add(const tensor& a, const tensor& b) {
  require_pair("add", "a", a, "b", b);
  tensor sum = output(a.shape());
  zip(a.data(), b.data(), sum.data(), a.numel(), threads_, [](float u, float v) { return u + v; });
  return sum;
}

tensor cpu_backend::sub(const tensor& a, const tensor& b) {
  require_pair("sub", "a", a, "b", b);
  tensor difference = output(a.shape());
  zip(a.data(), b.data(), difference.data(), a.numel(), threads_, [](float u, float v) { return u - v; });
  return difference;
}

void cpu_backend::add_inplace(tensor& a, const tensor& b) {
  require_pair("add_inplace", "a", a, "b", b);
  zip(a.data(), b.data(), a.data(), a.numel(), threads_, [](float u, float v) { return u + v; });
}

}  // namespace petra

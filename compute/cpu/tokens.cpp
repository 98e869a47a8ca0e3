// The token ops but layer norm: the exact GELU, softmax over the last axis, the batched matmul
// (single-threaded SGEMMs, one per item, spread over the backend's threads; in bf16 on operands rounded to
// bf16, as linear), the mean over tokens, the scale and the swap of axes 1 and 2. Each row's or item's
// arithmetic is independent of the thread count.
#include <cmath>

#include "compute/batched_matmul_gradients.hpp"
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/gemm.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

namespace {

constexpr double inv_sqrt2 = 0.70710678118654752440;
constexpr double inv_sqrt_2pi = 0.39894228040143267794;

}  // namespace

// --- GELU -------------------------------------------------------------------------------------

tensor cpu_backend::gelu_forward_impl(const tensor& x) {
  tensor y = output(x.shape());
  const float* in = x.data();
  float* out = y.data();
  const int64_t count = x.numel();
#pragma omp parallel for num_threads(cpu::team_for(count, threads_)) schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const double v = in[i];
    out[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v * inv_sqrt2)));
  }
  return y;
}

tensor cpu_backend::gelu_backward_impl(const tensor& x, const tensor& dy) {
  tensor dx = output(x.shape());
  const float *in = x.data(), *grad = dy.data();
  float* out = dx.data();
  const int64_t count = x.numel();
#pragma omp parallel for num_threads(cpu::team_for(count, threads_)) schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const double v = in[i];
    const double cdf = 0.5 * (1.0 + std::erf(v * inv_sqrt2)), pdf = inv_sqrt_2pi * std::exp(-0.5 * v * v);
    out[i] = static_cast<float>(grad[i] * (cdf + v * pdf));
  }
  return dx;
}

// --- softmax over the last axis ---------------------------------------------------------------

tensor cpu_backend::softmax_forward_impl(const tensor& x) {
  const int64_t k = x.dim(x.rank() - 1), rows = x.numel() / k;
  tensor y = output(x.shape());
  const float* in = x.data();
  float* out = y.data();
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * k;
    float top = row[0];
    for (int64_t j = 1; j < k; ++j) top = row[j] > top ? row[j] : top;
    double sum = 0;  // subtracting the max keeps exp() ≤ 1
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[j]) - top);
    for (int64_t j = 0; j < k; ++j)
      out[r * k + j] = static_cast<float>(std::exp(static_cast<double>(row[j]) - top) / sum);
  }
  return y;
}

tensor cpu_backend::softmax_backward_impl(const tensor& y, const tensor& dy) {
  const int64_t k = y.dim(y.rank() - 1), rows = y.numel() / k;
  tensor dx = output(y.shape());
  const float *out = y.data(), *grad = dy.data();
  float* result = dx.data();
#pragma omp parallel for num_threads(cpu::team_for(y.numel(), threads_)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t j = 0; j < k; ++j) dot += static_cast<double>(grad[r * k + j]) * out[r * k + j];
    for (int64_t j = 0; j < k; ++j)
      result[r * k + j] = static_cast<float>(out[r * k + j] * (grad[r * k + j] - dot));
  }
  return dx;
}

// --- batched matmul ---------------------------------------------------------------------------

void cpu_backend::batched_gemm(const tensor& a, bool transpose_a, const tensor& b, bool transpose_b,
                               tensor& c) {
  const int64_t batch = c.dim(0), m = c.dim(1), n = c.dim(2);
  const int64_t k = transpose_a ? a.dim(1) : a.dim(2);
  if (c.numel() == 0) return;
  float* out = c.data();
  if (k == 0) {
    for (int64_t i = 0; i < c.numel(); ++i) out[i] = 0.f;
    return;
  }
  const tensor a_in = gemm_operand(a), b_in = gemm_operand(b);
  const float *pa = a_in.data(), *pb = b_in.data();
  // Row-major op(a) (m, k)·op(b) (k, n); a stored (m, k) or (k, m), b stored (k, n) or (n, k).
  const int64_t lda = transpose_a ? m : k, ldb = transpose_b ? k : n;
  cpu::sgemm_batch(transpose_a, transpose_b, batch, m, n, k, pa, lda, m * k, pb, ldb, k * n, out, n, m * n,
                   threads_);
}

tensor cpu_backend::batched_matmul_impl(const tensor& a, const tensor& b, bool transpose_a,
                                        bool transpose_b) {
  tensor c = output({a.dim(0), transpose_a ? a.dim(2) : a.dim(1), transpose_b ? b.dim(1) : b.dim(2)});
  batched_gemm(a, transpose_a, b, transpose_b, c);
  return c;
}

std::pair<tensor, tensor> cpu_backend::batched_matmul_backward_impl(const tensor& a, const tensor& b,
                                                                    const tensor& dc, bool transpose_a,
                                                                    bool transpose_b) {
  tensor da = output(a.shape()), db = output(b.shape());
  const auto [for_da, for_db] = batched_matmul_gradient_products(transpose_a, transpose_b);
  batched_gemm(pick(for_da.first, a, b, dc), for_da.transpose_first, pick(for_da.second, a, b, dc),
               for_da.transpose_second, da);
  batched_gemm(pick(for_db.first, a, b, dc), for_db.transpose_first, pick(for_db.second, a, b, dc),
               for_db.transpose_second, db);
  return {da, db};
}

// --- mean over tokens -------------------------------------------------------------------------

tensor cpu_backend::token_mean_forward_impl(const tensor& x) {
  const int64_t n = x.dim(0), t = x.dim(1), c = x.dim(2);
  tensor y = output({n, c});
  const float* in = x.data();
  float* out = y.data();
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t nc = 0; nc < n * c; ++nc) {
    const float* column = in + (nc / c) * t * c + nc % c;
    double sum = 0;
    for (int64_t token = 0; token < t; ++token) sum += column[token * c];
    out[nc] = static_cast<float>(sum / static_cast<double>(t));
  }
  return y;
}

tensor cpu_backend::token_mean_backward_impl(const tensor& dy, const shape_t& x_shape) {
  const int64_t t = x_shape[1], c = x_shape[2];
  tensor dx = output(x_shape);
  const float* grad = dy.data();
  float* out = dx.data();
  const float scale = 1.f / static_cast<float>(t);
#pragma omp parallel for num_threads(cpu::team_for(dx.numel(), threads_)) schedule(static)
  for (int64_t i = 0; i < dx.numel(); ++i) out[i] = grad[(i / (t * c)) * c + i % c] * scale;
  return dx;
}

// --- scale and transpose12 ---------------------------------------------------------------------

tensor cpu_backend::scale_impl(const tensor& x, float alpha) {
  tensor y = output(x.shape());
  const float* in = x.data();
  float* out = y.data();
  const int64_t count = x.numel();
#pragma omp parallel for num_threads(cpu::team_for(count, threads_)) schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = alpha * in[i];
  return y;
}

tensor cpu_backend::transpose12_impl(const tensor& x) {
  const int64_t n = x.dim(0), a = x.dim(1), b = x.dim(2), c = x.dim(3);
  tensor y = output({n, b, a, c});
  const float* in = x.data();
  float* out = y.data();
  // One output row of C values per (n, j, i): y[n, j, i, :] = x[n, i, j, :].
  const int64_t rows = n * b * a;
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % a, j = (r / a) % b, item = r / (a * b);
    const float* from = in + ((item * a + i) * b + j) * c;
    float* to = out + r * c;
    for (int64_t k = 0; k < c; ++k) to[k] = from[k];
  }
  return y;
}

}  // namespace petra

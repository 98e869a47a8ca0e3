// Layer norm over each token's C features (x (N, T, C), the features last and contiguous):
// forward, backward and the forward-mode tangent in x. Per-token sums accumulate in double; the
// parameter gradients sum the tokens in order per feature, so any thread count gives the same bits.
#include <cmath>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

namespace {

/// The per-token projection P·v = v − mean(v) − x̂·mean(v·x̂) (scaled by inv_std): layer norm's
/// Jacobian in x is diag(γ)·P, its transpose P·diag(γ): with `g`, v is weighted by it first.
void project_token(const float* x, const float* v, const float* g, float mean, float inv_std, int64_t c,
                   float* out) {
  double sum = 0, sum_xhat = 0;
  for (int64_t i = 0; i < c; ++i) {
    const double gv = g ? static_cast<double>(g[i]) * v[i] : v[i];
    const double xhat = (x[i] - static_cast<double>(mean)) * inv_std;
    sum += gv;
    sum_xhat += gv * xhat;
  }
  const double mean_v = sum / static_cast<double>(c), mean_v_xhat = sum_xhat / static_cast<double>(c);
  for (int64_t i = 0; i < c; ++i) {
    const double gv = g ? static_cast<double>(g[i]) * v[i] : v[i];
    const double xhat = (x[i] - static_cast<double>(mean)) * inv_std;
    out[i] = static_cast<float>(inv_std * (gv - mean_v - xhat * mean_v_xhat));
  }
}

}  // namespace

tensor cpu_backend::layer_norm_forward_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                            float eps, layer_norm_saved& saved) {
  const int64_t tokens = x.dim(0) * x.dim(1), c = x.dim(2);
  saved.mean = output({x.dim(0), x.dim(1)});
  saved.inv_std = output({x.dim(0), x.dim(1)});
  tensor y = output(x.shape());
  const float *in = x.data(), *g = gamma.data(), *b = beta.data();
  float *out = y.data(), *means = saved.mean.data(), *inv_stds = saved.inv_std.data();
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = in + t * c;
    double sum = 0;
    for (int64_t i = 0; i < c; ++i) sum += row[i];
    const double mean = sum / static_cast<double>(c);
    double squares = 0;  // two passes: no cancellation when |mean| ≫ std
    for (int64_t i = 0; i < c; ++i) squares += (row[i] - mean) * (row[i] - mean);
    const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(c) + eps);
    means[t] = static_cast<float>(mean);
    inv_stds[t] = static_cast<float>(inv_std);
    // x̂ from the stored (fp32) statistics, as the backward and every other backend form it.
    const float m = means[t], s = inv_stds[t];
    for (int64_t i = 0; i < c; ++i) out[t * c + i] = (row[i] - m) * s * g[i] + b[i];
  }
  return y;
}

tensor cpu_backend::layer_norm_backward_impl(const tensor& x, const tensor& gamma,
                                             const layer_norm_saved& saved, const tensor& dy, tensor& dgamma,
                                             tensor& dbeta) {
  const int64_t tokens = x.dim(0) * x.dim(1), c = x.dim(2);
  tensor dx = output(x.shape());
  const float *in = x.data(), *g = gamma.data(), *grad = dy.data();
  const float *means = saved.mean.data(), *inv_stds = saved.inv_std.data();
  float* out = dx.data();
  const int team = cpu::team_for(x.numel(), threads_);
#pragma omp parallel for num_threads(team) schedule(static)
  for (int64_t t = 0; t < tokens; ++t)
    project_token(in + t * c, grad + t * c, g, means[t], inv_stds[t], c, out + t * c);
  // dγ and dβ: per feature, the tokens in order (the same bits on any number of threads).
  float *dg = dgamma.data(), *db = dbeta.data();
#pragma omp parallel for num_threads(team) schedule(static)
  for (int64_t i = 0; i < c; ++i) {
    double sum_g = 0, sum_b = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const float xhat = (in[t * c + i] - means[t]) * inv_stds[t];
      sum_g += static_cast<double>(grad[t * c + i]) * xhat;
      sum_b += grad[t * c + i];
    }
    dg[i] += static_cast<float>(sum_g);
    db[i] += static_cast<float>(sum_b);
  }
  return dx;
}

tensor cpu_backend::layer_norm_jvp_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                        const tensor& x_dot) {
  const int64_t tokens = x.dim(0) * x.dim(1), c = x.dim(2);
  tensor y_dot = output(x.shape());
  const float *in = x.data(), *g = gamma.data(), *v = x_dot.data();
  const float *means = saved.mean.data(), *inv_stds = saved.inv_std.data();
  float* out = y_dot.data();
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t t = 0; t < tokens; ++t) {
    project_token(in + t * c, v + t * c, nullptr, means[t], inv_stds[t], c, out + t * c);
    for (int64_t i = 0; i < c; ++i) out[t * c + i] *= g[i];
  }
  return y_dot;
}

}  // namespace petra

// Batch norm over (N, H, W) per channel: training forward with batch statistics,
// running-statistics update, eval forward, backward. Sums accumulate in double.
#include <algorithm>
#include <cmath>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"
#include "compute/op_checks.hpp"

namespace petra {

namespace {

struct nchw {
  int64_t n, c, plane;  // plane = H·W
};

nchw extents_of(const tensor& x) { return {x.dim(0), x.dim(1), x.dim(2) * x.dim(3)}; }

/// y = x·scale[c] + shift[c] over every plane.
void scale_shift(const float* x, const float* scale, const float* shift, float* y, nchw s, int threads) {
#pragma omp parallel for num_threads(cpu::team_for(s.n* s.c* s.plane, threads)) schedule(static)
  for (int64_t nc = 0; nc < s.n * s.c; ++nc) {
    const int64_t c = nc % s.c;
    const float a = scale[c], b = shift[c];
    const float* in = x + nc * s.plane;
    float* out = y + nc * s.plane;
#pragma omp simd
    for (int64_t i = 0; i < s.plane; ++i) out[i] = in[i] * a + b;
  }
}

}  // namespace

tensor cpu_backend::batch_norm_forward_train_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                                  float eps, batch_norm_saved& saved) {
  const nchw s = extents_of(x);
  saved.mean = output({s.c});
  saved.inv_std = output({s.c});
  tensor y = output(x.shape());
  const float* in = x.data();
  float* out = y.data();
  const double count = static_cast<double>(s.n * s.plane);

  // Statistics and y of a channel in one task: its planes are still in cache when y is written.
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t c = 0; c < s.c; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < s.n; ++n) {
      const float* plane = in + (n * s.c + c) * s.plane;
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < s.plane; ++i) sum += plane[i];
    }
    const double mean = sum / count;
    double squares = 0;  // two passes: no cancellation when |mean| ≫ std
    for (int64_t n = 0; n < s.n; ++n) {
      const float* plane = in + (n * s.c + c) * s.plane;
#pragma omp simd reduction(+ : squares)
      for (int64_t i = 0; i < s.plane; ++i) squares += (plane[i] - mean) * (plane[i] - mean);
    }
    const double inv_std = 1.0 / std::sqrt(squares / count + eps);
    saved.mean.data()[c] = static_cast<float>(mean);
    saved.inv_std.data()[c] = static_cast<float>(inv_std);
    const float a = static_cast<float>(gamma.data()[c] * inv_std);
    const float b = static_cast<float>(beta.data()[c] - mean * gamma.data()[c] * inv_std);
    for (int64_t n = 0; n < s.n; ++n) {
      const float* plane = in + (n * s.c + c) * s.plane;
      float* result = out + (n * s.c + c) * s.plane;
#pragma omp simd
      for (int64_t i = 0; i < s.plane; ++i) result[i] = plane[i] * a + b;
    }
  }
  return y;
}

void cpu_backend::batch_norm_update_running_impl(const batch_norm_saved& saved, int64_t count_per_channel,
                                                 float eps, float momentum, tensor& running_mean,
                                                 tensor& running_var) {
  const int64_t channels = saved.mean.dim(0);
  const double bessel = static_cast<double>(count_per_channel) / static_cast<double>(count_per_channel - 1);
  for (int64_t c = 0; c < channels; ++c) {
    const double inv_std = saved.inv_std.data()[c];
    const double biased_var = std::max(0.0, 1.0 / (inv_std * inv_std) - eps);
    float& mean = running_mean.data()[c];
    float& var = running_var.data()[c];
    mean = static_cast<float>((1.0 - momentum) * mean + momentum * saved.mean.data()[c]);
    var = static_cast<float>((1.0 - momentum) * var + momentum * biased_var * bessel);
  }
}

tensor cpu_backend::batch_norm_forward_eval_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                                 const tensor& running_mean, const tensor& running_var,
                                                 float eps) {
  const nchw s = extents_of(x);
  tensor scale = output({s.c}), shift = output({s.c});
  for (int64_t c = 0; c < s.c; ++c) {
    const float var = running_var.data()[c];
    // A value only the kernel sees (on a device, after the call has returned).
    if (!(var + eps > 0.f))
      fail_op("batch_norm_forward_eval", "running_var[" + std::to_string(c) +
                                             "] + eps = " + std::to_string(var + eps) +
                                             " is not positive: the running statistics are corrupt");
    const double a = gamma.data()[c] / std::sqrt(static_cast<double>(var) + eps);
    scale.data()[c] = static_cast<float>(a);
    shift.data()[c] = static_cast<float>(beta.data()[c] - running_mean.data()[c] * a);
  }
  tensor y = output(x.shape());
  scale_shift(x.data(), scale.data(), shift.data(), y.data(), s, threads_);
  return y;
}

tensor cpu_backend::batch_norm_backward_impl(const tensor& x, const tensor& gamma,
                                             const batch_norm_saved& saved, const tensor& dy, tensor& dgamma,
                                             tensor& dbeta) {
  const nchw s = extents_of(x);
  const double count = static_cast<double>(s.n * s.plane);
  tensor dx = output(x.shape());
  const float *in = x.data(), *grad = dy.data();
  float* out = dx.data();

  // dx = γ·inv_std·(dy − mean(dy) − x̂·mean(dy·x̂)), per channel.
#pragma omp parallel for num_threads(cpu::team_for(x.numel(), threads_)) schedule(static)
  for (int64_t c = 0; c < s.c; ++c) {
    const double mean = saved.mean.data()[c], inv_std = saved.inv_std.data()[c];
    double sum_dy = 0, sum_dy_centred = 0;
    for (int64_t n = 0; n < s.n; ++n) {
      const float* xp = in + (n * s.c + c) * s.plane;
      const float* gp = grad + (n * s.c + c) * s.plane;
#pragma omp simd reduction(+ : sum_dy, sum_dy_centred)
      for (int64_t i = 0; i < s.plane; ++i) {
        sum_dy += gp[i];
        sum_dy_centred += gp[i] * (xp[i] - mean);
      }
    }
    const double sum_dy_xhat = sum_dy_centred * inv_std;
    dgamma.data()[c] += static_cast<float>(sum_dy_xhat);
    dbeta.data()[c] += static_cast<float>(sum_dy);
    const double k = gamma.data()[c] * inv_std;
    // dx = a·dy + b·(x − μ) + d with the per-channel constants folded.
    const float a = static_cast<float>(k);
    const float b = static_cast<float>(-k * inv_std * sum_dy_xhat / count);
    const float d = static_cast<float>(-k * sum_dy / count);
    const float mean_f = static_cast<float>(mean);
    for (int64_t n = 0; n < s.n; ++n) {
      const float* xp = in + (n * s.c + c) * s.plane;
      const float* gp = grad + (n * s.c + c) * s.plane;
      float* dxp = out + (n * s.c + c) * s.plane;
#pragma omp simd
      for (int64_t i = 0; i < s.plane; ++i) dxp[i] = a * gp[i] + b * (xp[i] - mean_f) + d;
    }
  }
  return dx;
}

}  // namespace petra

// Batch norm over (N, H, W) per channel by cuDNN (spatial mode). cuDNN saves the batch mean and
// 1/sqrt(σ²_B + eps) ("inverse variance" in its names): exactly batch_norm_saved{mean, inv_std}.
// The running statistics are not left to cuDNN's exponentialAverageFactor: a training forward
// does not always update them here (recompute passes), and the update must use PyTorch's
// unbiased variance from the saved statistics, so our kernel does it, as the CPU twin.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

namespace {

using cuda::fail;

const float one = 1.f, zero = 0.f;

// cuDNN's backward takes an epsilon, but only uses it when no saved statistics are given; ours
// always are (the saved inv_std already holds the forward's eps).
constexpr double unused_backward_eps = 1e-5;

}  // namespace

tensor cuda_backend::batch_norm_forward_train(const tensor& x, const tensor& gamma, const tensor& beta,
                                              float eps, batch_norm_saved& saved) {
  const char* op = "batch_norm_forward_train";
  require(op, "x", x, 4, "(N, C, H, W)");
  const int64_t channels = x.dim(1);
  require_vector(op, "gamma", gamma, channels, "x's channels");
  require_vector(op, "beta", beta, channels, "x's channels");
  if (x.dim(0) * x.dim(2) * x.dim(3) < 1)
    fail(op, "x " + x.shape_str() + " has no values per channel: batch norm needs N·H·W ≥ 1");
  if (!(eps >= static_cast<float>(CUDNN_BN_MIN_EPSILON)))
    fail(op, "eps = " + std::to_string(eps) + " must be ≥ " + std::to_string(CUDNN_BN_MIN_EPSILON));
  enter();
  cuda::batch_norm_plan& plan = dnn_.batch_norm(x.dim(0), channels, x.dim(2), x.dim(3));
  tensor y = output(x.shape());
  saved.mean = output({channels});
  saved.inv_std = output({channels});
  PETRA_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(
      context_->dnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, plan.x.get(), x.data(), plan.x.get(), y.data(),
      plan.params.get(), gamma.data(), beta.data(), /*exponentialAverageFactor=*/1.0,
      /*resultRunningMean=*/nullptr, /*resultRunningVariance=*/nullptr, eps, saved.mean.data(),
      saved.inv_std.data()));
  return y;
}

void cuda_backend::batch_norm_update_running(const batch_norm_saved& saved, int64_t count_per_channel,
                                             float eps, float momentum, tensor& running_mean,
                                             tensor& running_var) {
  const char* op = "batch_norm_update_running";
  require(op, "saved.mean", saved.mean, 1, "(C) from batch_norm_forward_train");
  const int64_t channels = saved.mean.dim(0);
  require_vector(op, "saved.inv_std", saved.inv_std, channels, "saved.mean");
  require_vector(op, "running_mean", running_mean, channels, "saved.mean");
  require_vector(op, "running_var", running_var, channels, "saved.mean");
  if (count_per_channel < 2)
    fail(op, "count_per_channel = " + std::to_string(count_per_channel) +
                 ": the unbiased variance needs at least 2 values per channel (N·H·W ≥ 2)");
  if (!(momentum >= 0.f && momentum <= 1.f))
    fail(op, "momentum = " + std::to_string(momentum) + " must be in [0, 1]");
  enter();
  cuda::kernels::batch_norm_update_running(saved.mean.data(), saved.inv_std.data(), running_mean.data(),
                                           running_var.data(), channels, count_per_channel, eps, momentum,
                                           stream());
}

tensor cuda_backend::batch_norm_forward_eval(const tensor& x, const tensor& gamma, const tensor& beta,
                                             const tensor& running_mean, const tensor& running_var,
                                             float eps) {
  const char* op = "batch_norm_forward_eval";
  require(op, "x", x, 4, "(N, C, H, W)");
  const int64_t channels = x.dim(1);
  require_vector(op, "gamma", gamma, channels, "x's channels");
  require_vector(op, "beta", beta, channels, "x's channels");
  require_vector(op, "running_mean", running_mean, channels, "x's channels");
  require_vector(op, "running_var", running_var, channels, "x's channels");
  if (x.numel() == 0) fail(op, "x " + x.shape_str() + " is empty");
  if (!(eps >= static_cast<float>(CUDNN_BN_MIN_EPSILON)))
    fail(op, "eps = " + std::to_string(eps) + " must be ≥ " + std::to_string(CUDNN_BN_MIN_EPSILON));
  // Unlike the CPU twin, a negative running variance is not caught here: checking would read the
  // statistics back and stall the stream.
  enter();
  cuda::batch_norm_plan& plan = dnn_.batch_norm(x.dim(0), channels, x.dim(2), x.dim(3));
  tensor y = output(x.shape());
  PETRA_CUDA_CHECK(cudnnBatchNormalizationForwardInference(
      context_->dnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, plan.x.get(), x.data(), plan.x.get(), y.data(),
      plan.params.get(), gamma.data(), beta.data(), running_mean.data(), running_var.data(), eps));
  return y;
}

tensor cuda_backend::batch_norm_backward(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                                         const tensor& dy, tensor& dgamma, tensor& dbeta) {
  const char* op = "batch_norm_backward";
  require(op, "x", x, 4, "(N, C, H, W)");
  const int64_t channels = x.dim(1);
  require_vector(op, "gamma", gamma, channels, "x's channels");
  require_vector(op, "saved.mean", saved.mean, channels, "x's channels");
  require_vector(op, "saved.inv_std", saved.inv_std, channels, "x's channels");
  require(op, "dy", dy, 4, "(N, C, H, W)");
  cuda::require_same_shape(op, "dy", dy, "x", x);
  require_vector(op, "dgamma", dgamma, channels, "x's channels");
  require_vector(op, "dbeta", dbeta, channels, "x's channels");
  if (x.numel() == 0) fail(op, "x " + x.shape_str() + " is empty");
  enter();
  cuda::batch_norm_plan& plan = dnn_.batch_norm(x.dim(0), channels, x.dim(2), x.dim(3));
  tensor dx = output(x.shape());
  // Data: dx = 1·result + 0·dx. Parameters: dγ = 1·result + 1·dγ (they accumulate).
  PETRA_CUDA_CHECK(cudnnBatchNormalizationBackward(
      context_->dnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &one, plan.x.get(), x.data(), plan.x.get(),
      dy.data(), plan.x.get(), dx.data(), plan.params.get(), gamma.data(), dgamma.data(), dbeta.data(),
      unused_backward_eps, saved.mean.data(), saved.inv_std.data()));
  return dx;
}

}  // namespace petra

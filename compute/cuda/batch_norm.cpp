// Batch norm over (N, H, W) per channel by cuDNN (spatial mode). cuDNN saves the batch mean and
// 1/sqrt(σ²_B + eps) ("inverse variance" in its names): exactly batch_norm_saved{mean, inv_std}.
// The running statistics are not left to cuDNN's exponentialAverageFactor: a training forward
// does not always update them here (recompute passes), and the update must use PyTorch's
// unbiased variance from the saved statistics, so our kernel does it, as the CPU twin.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"
#include "compute/op_checks.hpp"

namespace petra {

namespace {

const float one = 1.f, zero = 0.f;

// cuDNN's backward takes an epsilon, but only uses it when no saved statistics are given; ours
// always are (the saved inv_std already holds the forward's eps).
constexpr double unused_backward_eps = 1e-5;

/// cuDNN's own limit, stricter than the interface's eps ≥ 0.
void require_cudnn_eps(const char* op, float eps) {
  if (!(eps >= static_cast<float>(CUDNN_BN_MIN_EPSILON)))
    fail_op(op, "eps = " + std::to_string(eps) + " must be ≥ " + std::to_string(CUDNN_BN_MIN_EPSILON) +
                    " for cuDNN's batch norm");
}

}  // namespace

tensor cuda_backend::batch_norm_forward_train_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                                   float eps, batch_norm_saved& saved) {
  const int64_t channels = x.dim(1);
  require_cudnn_eps("batch_norm_forward_train", eps);
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

void cuda_backend::batch_norm_update_running_impl(const batch_norm_saved& saved, int64_t count_per_channel,
                                                  float eps, float momentum, tensor& running_mean,
                                                  tensor& running_var) {
  const int64_t channels = saved.mean.dim(0);
  enter();
  cuda::kernels::batch_norm_update_running(saved.mean.data(), saved.inv_std.data(), running_mean.data(),
                                           running_var.data(), channels, count_per_channel, eps, momentum,
                                           stream());
}

tensor cuda_backend::batch_norm_forward_eval_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                                  const tensor& running_mean, const tensor& running_var,
                                                  float eps) {
  const int64_t channels = x.dim(1);
  require_cudnn_eps("batch_norm_forward_eval", eps);
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

tensor cuda_backend::batch_norm_backward_impl(const tensor& x, const tensor& gamma,
                                              const batch_norm_saved& saved, const tensor& dy, tensor& dgamma,
                                              tensor& dbeta) {
  const int64_t channels = x.dim(1);
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

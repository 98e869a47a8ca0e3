// conv2d forward/backward on the GPU by cuDNN, with the shape's cached plan (shapes checked by backend).
// In bf16_emulated the operands are rounded first (bf16_operands.cpp); dw, dx, y and db stay fp32.
// bf16 runs on tensor cores instead (conv2d_bf16.cpp).
#include "compute/cuda/channel_sums.hpp"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/conv_algorithm_registry.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

namespace {

const float one = 1.f, zero = 0.f;

}  // namespace

cuda::conv_plan& cuda_backend::conv_plan_for(const shape_t& x_shape, const shape_t& w_shape,
                                             conv2d_params p) {
  cuda::conv_geometry g;
  g.n = x_shape[0], g.c = x_shape[1], g.h = x_shape[2], g.w = x_shape[3];
  g.k = w_shape[0], g.r = w_shape[2], g.s = w_shape[3];
  g.stride = p.stride, g.padding = p.padding;
  return dnn_.conv(g);
}

std::shared_ptr<storage> cuda_backend::channel_sum_scratch(int64_t n, int64_t channels, int64_t area) {
  const int64_t slices = cuda::kernels::channel_sum_slices(n, area);
  return context_->allocate(static_cast<std::size_t>(channels * slices) * sizeof(double));
}

tensor cuda_backend::conv2d_forward_impl(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) {
  enter();
  if (tensor_core_bf16()) return conv2d_forward_bf16(x, w, b, p);
  cuda::conv_plan& plan = conv_plan_for(x.shape(), w.shape(), p);
  tensor y = output(plan.geometry.y_shape());
  const tensor x_in = bf16_operand(x), w_in = bf16_operand(w);
  if (!plan.forward)
    plan.forward = cuda::choose_algorithm(*context_, plan, cuda::conv_direction::forward, policy_,
                                          {x_in.data(), w_in.data()});
  const cuda::conv_algorithm& a = *plan.forward;
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  PETRA_CUDA_CHECK(cudnnConvolutionForward(context_->dnn(), &one, plan.x.get(), x_in.data(), plan.w.get(),
                                           w_in.data(), plan.conv.get(),
                                           static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace,
                                           a.workspace_bytes, &zero, plan.y.get(), y.data()));
  if (b.defined())
    PETRA_CUDA_CHECK(
        cudnnAddTensor(context_->dnn(), &one, plan.bias.get(), b.data(), &one, plan.y.get(), y.data()));
  return y;
}

tensor cuda_backend::conv2d_backward_data_impl(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                               conv2d_params p) {
  enter();
  if (tensor_core_bf16()) return conv2d_backward_data_bf16(dy, w, x_shape, p);
  cuda::conv_plan& plan = conv_plan_for(x_shape, w.shape(), p);
  tensor dx = output(x_shape);
  const tensor dy_in = bf16_operand(dy), w_in = bf16_operand(w);
  if (!plan.backward_data)
    plan.backward_data = cuda::choose_algorithm(*context_, plan, cuda::conv_direction::backward_data, policy_,
                                                {w_in.data(), dy_in.data()});
  const cuda::conv_algorithm& a = *plan.backward_data;
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  PETRA_CUDA_CHECK(cudnnConvolutionBackwardData(context_->dnn(), &one, plan.w.get(), w_in.data(),
                                                plan.y.get(), dy_in.data(), plan.conv.get(),
                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), workspace,
                                                a.workspace_bytes, &zero, plan.x.get(), dx.data()));
  return dx;
}

void cuda_backend::conv2d_backward_filter_impl(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                               tensor& db) {
  enter();
  if (tensor_core_bf16()) return conv2d_backward_filter_bf16(x, dy, p, dw, db);
  cuda::conv_plan& plan = conv_plan_for(x.shape(), dw.shape(), p);
  const tensor x_in = bf16_operand(x), dy_in = bf16_operand(dy);
  if (!plan.backward_filter)
    plan.backward_filter = cuda::choose_algorithm(*context_, plan, cuda::conv_direction::backward_filter,
                                                  policy_, {x_in.data(), dy_in.data()});
  const cuda::conv_algorithm& a = *plan.backward_filter;
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  // beta = 1: parameter gradients accumulate.
  PETRA_CUDA_CHECK(cudnnConvolutionBackwardFilter(
      context_->dnn(), &one, plan.x.get(), x_in.data(), plan.y.get(), dy_in.data(), plan.conv.get(),
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), workspace, a.workspace_bytes, &one, plan.w.get(),
      dw.data()));
  // Our own reduction rather than cudnnConvolutionBackwardBias: fixed order, deterministic.
  if (db.defined()) {
    const cuda::conv_geometry& g = plan.geometry;
    const auto partial = channel_sum_scratch(g.n, g.k, g.p() * g.q());
    cuda::kernels::add_channel_sums(dy_in.data(), db.data(), g.n, g.k, g.p() * g.q(),
                                    static_cast<double*>(partial->data()), stream());
  }
}

}  // namespace petra

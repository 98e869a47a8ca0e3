// The convolutions in bf16 on tensor cores (runtime.precision: bf16): cuDNN's legacy API with
// bf16 x, w and y descriptors and an fp32 convolution descriptor (bf16 products summed in fp32,
// CUDNN_TENSOR_OP_MATH), on bf16 copies of the fp32 operands. That API writes its result in bf16
// too: y and dx come back to fp32 by a kernel (with the bias, in fp32), dw is computed fresh in
// bf16 and added to the fp32 gradient. So each result carries one bf16 rounding (≤ 2^-8 relative)
// more than the CPU's bf16, which rounds only the operands; db sums the bf16 dy the convolution
// reads, as the CPU does.
#include "compute/cuda/bf16_kernels.hpp"
#include "compute/cuda/channel_sums.hpp"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/conv_algorithm_registry.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"

namespace petra {

namespace {

// cuDNN's scaling factors are fp32 for bf16 data (its PSEUDO_BFLOAT16 configuration).
const float one = 1.f, zero = 0.f;

}  // namespace

tensor cuda_backend::conv2d_forward_bf16(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) {
  cuda::conv_plan& plan = conv_plan_for(x.shape(), w.shape(), p);
  const cuda::conv_geometry& g = plan.geometry;
  const cuda::bf16_buffer x16 = to_bf16(x), w16 = to_bf16(w);
  if (!plan.forward)
    plan.forward = cuda::choose_algorithm(*context_, plan, cuda::conv_direction::forward, policy_,
                                          {x16.data(), w16.data()});
  const cuda::conv_algorithm& a = *plan.forward;
  const cuda::bf16_buffer y16 = bf16_scratch(g.n * g.k * g.p() * g.q());
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  PETRA_CUDA_CHECK(cudnnConvolutionForward(context_->dnn(), &one, plan.x.get(), x16.data(), plan.w.get(),
                                           w16.data(), plan.conv.get(),
                                           static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace,
                                           a.workspace_bytes, &zero, plan.y.get(), y16.data()));
  tensor y = output(g.y_shape());
  cuda::kernels::from_bf16(y16.data(), b.defined() ? b.data() : nullptr, y.data(), g.n, g.k, g.p() * g.q(),
                           stream());
  return y;
}

tensor cuda_backend::conv2d_backward_data_bf16(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                               conv2d_params p) {
  cuda::conv_plan& plan = conv_plan_for(x_shape, w.shape(), p);
  const cuda::conv_geometry& g = plan.geometry;
  const cuda::bf16_buffer dy16 = to_bf16(dy), w16 = to_bf16(w);
  if (!plan.backward_data)
    plan.backward_data = cuda::choose_algorithm(*context_, plan, cuda::conv_direction::backward_data, policy_,
                                                {w16.data(), dy16.data()});
  const cuda::conv_algorithm& a = *plan.backward_data;
  const cuda::bf16_buffer dx16 = bf16_scratch(g.n * g.c * g.h * g.w);
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  PETRA_CUDA_CHECK(cudnnConvolutionBackwardData(context_->dnn(), &one, plan.w.get(), w16.data(), plan.y.get(),
                                                dy16.data(), plan.conv.get(),
                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), workspace,
                                                a.workspace_bytes, &zero, plan.x.get(), dx16.data()));
  tensor dx = output(x_shape);
  cuda::kernels::from_bf16(dx16.data(), nullptr, dx.data(), g.n, g.c, g.h * g.w, stream());
  return dx;
}

void cuda_backend::conv2d_backward_filter_bf16(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                               tensor& db) {
  cuda::conv_plan& plan = conv_plan_for(x.shape(), dw.shape(), p);
  const cuda::conv_geometry& g = plan.geometry;
  const cuda::bf16_buffer x16 = to_bf16(x), dy16 = to_bf16(dy);
  if (!plan.backward_filter)
    plan.backward_filter = cuda::choose_algorithm(*context_, plan, cuda::conv_direction::backward_filter,
                                                  policy_, {x16.data(), dy16.data()});
  const cuda::conv_algorithm& a = *plan.backward_filter;
  const cuda::bf16_buffer dw16 = bf16_scratch(dw.numel());
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  // beta = 0 into a bf16 scratch, then += in fp32: accumulating in bf16 would round the running sum.
  PETRA_CUDA_CHECK(cudnnConvolutionBackwardFilter(
      context_->dnn(), &one, plan.x.get(), x16.data(), plan.y.get(), dy16.data(), plan.conv.get(),
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), workspace, a.workspace_bytes, &zero, plan.w.get(),
      dw16.data()));
  cuda::kernels::add_from_bf16(dw16.data(), dw.data(), dw.numel(), stream());
  if (db.defined()) {
    const auto partial = channel_sum_scratch(g.n, g.k, g.p() * g.q());
    cuda::kernels::add_channel_sums_bf16(dy16.data(), db.data(), g.n, g.k, g.p() * g.q(),
                                         static_cast<double*>(partial->data()), stream());
  }
}

}  // namespace petra

// conv2d forward/backward on the GPU: shape checks, then cuDNN with the shape's cached plan.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"
#include "compute/op_checks.hpp"

namespace petra {

namespace {

using cuda::fail;

const float one = 1.f, zero = 0.f;

void require_output_shape(const char* op, const tensor& dy, const cuda::conv_geometry& g) {
  if (dy.shape() != g.y_shape())
    fail(op, "dy " + dy.shape_str() + " does not match the convolution's output " + to_string(g.y_shape()) +
                 " for " + g.str());
}

}  // namespace

cuda::conv_plan& cuda_backend::conv_plan_for(const char* op, const shape_t& x_shape, const shape_t& w_shape,
                                             conv2d_params p) {
  check_conv2d_shapes(op, x_shape, w_shape, p);
  cuda::conv_geometry g;
  g.n = x_shape[0], g.c = x_shape[1], g.h = x_shape[2], g.w = x_shape[3];
  g.k = w_shape[0], g.r = w_shape[2], g.s = w_shape[3];
  g.stride = p.stride, g.padding = p.padding;
  if (g.h + 2 * g.padding < g.r || g.w + 2 * g.padding < g.s)
    fail(op, "x " + to_string(x_shape) + " padded by " + std::to_string(p.padding) +
                 " is smaller than the kernel of w " + to_string(w_shape) +
                 ": use more padding or a smaller kernel");
  return dnn_.conv(g);
}

tensor cuda_backend::conv2d_forward(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) {
  const char* op = "conv2d_forward";
  require(op, "x", x, 4, "(N, C, H, W)");
  require(op, "w", w, 4, "(K, C, R, S)");
  enter();
  cuda::conv_plan& plan = conv_plan_for(op, x.shape(), w.shape(), p);
  if (b.defined()) require_vector(op, "b", b, plan.geometry.k, "w's output channels (K)");
  if (!plan.forward) plan.forward = cuda::choose_forward(context_->dnn(), plan, policy_);
  const cuda::conv_algorithm& a = *plan.forward;
  tensor y = output(plan.geometry.y_shape());
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  PETRA_CUDA_CHECK(cudnnConvolutionForward(context_->dnn(), &one, plan.x.get(), x.data(), plan.w.get(),
                                           w.data(), plan.conv.get(),
                                           static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace,
                                           a.workspace_bytes, &zero, plan.y.get(), y.data()));
  if (b.defined())
    PETRA_CUDA_CHECK(
        cudnnAddTensor(context_->dnn(), &one, plan.bias.get(), b.data(), &one, plan.y.get(), y.data()));
  return y;
}

tensor cuda_backend::conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                          conv2d_params p) {
  const char* op = "conv2d_backward_data";
  require(op, "dy", dy, 4, "(N, K, P, Q)");
  require(op, "w", w, 4, "(K, C, R, S)");
  enter();
  cuda::conv_plan& plan = conv_plan_for(op, x_shape, w.shape(), p);
  require_output_shape(op, dy, plan.geometry);
  if (!plan.backward_data) plan.backward_data = cuda::choose_backward_data(context_->dnn(), plan, policy_);
  const cuda::conv_algorithm& a = *plan.backward_data;
  tensor dx = output(x_shape);
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  PETRA_CUDA_CHECK(cudnnConvolutionBackwardData(context_->dnn(), &one, plan.w.get(), w.data(), plan.y.get(),
                                                dy.data(), plan.conv.get(),
                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), workspace,
                                                a.workspace_bytes, &zero, plan.x.get(), dx.data()));
  return dx;
}

void cuda_backend::conv2d_backward_filter(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                          tensor& db) {
  const char* op = "conv2d_backward_filter";
  require(op, "x", x, 4, "(N, C, H, W)");
  require(op, "dy", dy, 4, "(N, K, P, Q)");
  require(op, "dw", dw, 4, "(K, C, R, S)");
  enter();
  cuda::conv_plan& plan = conv_plan_for(op, x.shape(), dw.shape(), p);
  require_output_shape(op, dy, plan.geometry);
  if (db.defined()) require_vector(op, "db", db, plan.geometry.k, "dw's output channels (K)");
  if (!plan.backward_filter)
    plan.backward_filter = cuda::choose_backward_filter(context_->dnn(), plan, policy_);
  const cuda::conv_algorithm& a = *plan.backward_filter;
  plan.conv.set_math(cuda::math_for(policy_, a.math));
  void* workspace = context_->workspace(a.workspace_bytes);
  // beta = 1: parameter gradients accumulate.
  PETRA_CUDA_CHECK(
      cudnnConvolutionBackwardFilter(context_->dnn(), &one, plan.x.get(), x.data(), plan.y.get(), dy.data(),
                                     plan.conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
                                     workspace, a.workspace_bytes, &one, plan.w.get(), dw.data()));
  // Our own reduction rather than cudnnConvolutionBackwardBias: fixed order, deterministic.
  if (db.defined())
    cuda::kernels::add_channel_sums(dy.data(), db.data(), plan.geometry.n, plan.geometry.k,
                                    plan.geometry.p() * plan.geometry.q(), stream());
}

}  // namespace petra

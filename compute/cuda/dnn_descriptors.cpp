// cuDNN descriptors and convolution algorithm choice.
#include "compute/cuda/dnn_descriptors.hpp"

#include <sstream>
#include <vector>

#include "compute/cuda/checks.hpp"

namespace petra::cuda {

namespace {

int extent(int64_t v) { return to_int("cudnn descriptor", "an extent", v); }

/// The first heuristic result that ran, fits the workspace limit, is deterministic when asked
/// and does not down-convert fp32 to fp16; results come ordered best first.
template <typename perf_t>
conv_algorithm pick(const std::vector<perf_t>& results, int returned, const conv_policy& policy,
                    const char* direction, const conv_geometry& g) {
  std::optional<conv_algorithm> fallback;  // TF32 results when TF32 is off: run them in FMA math
  for (int i = 0; i < returned; ++i) {
    const perf_t& r = results[static_cast<std::size_t>(i)];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    if (r.memory > policy.max_workspace_bytes) continue;
    if (policy.deterministic && r.determinism != CUDNN_DETERMINISTIC) continue;
    if (r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
    const conv_algorithm a{static_cast<int>(r.algo), r.mathType, r.memory};
    if (!policy.tf32 && r.mathType == CUDNN_TENSOR_OP_MATH) {
      if (!fallback) fallback = a;
      continue;
    }
    return a;
  }
  if (fallback) return *fallback;
  throw std::runtime_error(std::string("cuDNN offers no ") + direction + " algorithm for " + g.str() +
                           (policy.deterministic ? " that is deterministic" : "") + " within " +
                           std::to_string(policy.max_workspace_bytes >> 20) +
                           " MiB of workspace: turn deterministic algorithms off or report the shape");
}

}  // namespace

std::string conv_geometry::str() const {
  std::ostringstream out;
  out << "x (" << n << ", " << c << ", " << h << ", " << w << ") * w (" << k << ", " << c << ", " << r << ", "
      << s << "), stride " << stride << ", padding " << padding;
  return out.str();
}

tensor_descriptor::tensor_descriptor() {
  cudnnTensorDescriptor_t d = nullptr;
  PETRA_CUDA_CHECK(cudnnCreateTensorDescriptor(&d));
  desc_.reset(d);
}

tensor_descriptor::tensor_descriptor(int64_t n, int64_t c, int64_t h, int64_t w) : tensor_descriptor() {
  PETRA_CUDA_CHECK(cudnnSetTensor4dDescriptor(get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, extent(n),
                                              extent(c), extent(h), extent(w)));
}

tensor_descriptor tensor_descriptor::batch_norm_parameters(const tensor_descriptor& x) {
  tensor_descriptor d;
  PETRA_CUDA_CHECK(cudnnDeriveBNTensorDescriptor(d.get(), x.get(), CUDNN_BATCHNORM_SPATIAL));
  return d;
}

std::array<int, 4> tensor_descriptor::extents() const {
  cudnnDataType_t type;
  std::array<int, 4> e{};
  int strides[4];
  PETRA_CUDA_CHECK(cudnnGetTensor4dDescriptor(get(), &type, &e[0], &e[1], &e[2], &e[3], &strides[0],
                                              &strides[1], &strides[2], &strides[3]));
  return e;
}

filter_descriptor::filter_descriptor(int64_t k, int64_t c, int64_t r, int64_t s) {
  cudnnFilterDescriptor_t d = nullptr;
  PETRA_CUDA_CHECK(cudnnCreateFilterDescriptor(&d));
  desc_.reset(d);
  PETRA_CUDA_CHECK(cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, extent(k), extent(c),
                                              extent(r), extent(s)));
}

convolution_descriptor::convolution_descriptor(int stride, int padding) {
  cudnnConvolutionDescriptor_t d = nullptr;
  PETRA_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&d));
  desc_.reset(d);
  PETRA_CUDA_CHECK(cudnnSetConvolution2dDescriptor(d, padding, padding, stride, stride, 1, 1,
                                                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
}

void convolution_descriptor::set_math(cudnnMathType_t math) const {
  PETRA_CUDA_CHECK(cudnnSetConvolutionMathType(get(), math));
}

conv_plan::conv_plan(const conv_geometry& g)
    : geometry(g),
      x(g.n, g.c, g.h, g.w),
      y(g.n, g.k, g.p(), g.q()),
      bias(1, g.k, 1, 1),
      w(g.k, g.c, g.r, g.s),
      conv(g.stride, g.padding) {}

shape_t conv_plan::cudnn_output_shape() const {
  int n = 0, c = 0, h = 0, wd = 0;
  PETRA_CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &c, &h, &wd));
  return {n, c, h, wd};
}

batch_norm_plan::batch_norm_plan(int64_t n, int64_t c, int64_t h, int64_t w)
    : x(n, c, h, w), params(tensor_descriptor::batch_norm_parameters(x)) {}

cudnnMathType_t math_for(const conv_policy& policy, cudnnMathType_t chosen) {
  return policy.tf32 ? chosen : CUDNN_FMA_MATH;
}

conv_algorithm choose_forward(cudnnHandle_t handle, const conv_plan& plan, const conv_policy& policy) {
  plan.conv.set_math(policy.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
  std::vector<cudnnConvolutionFwdAlgoPerf_t> results(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  int returned = 0;
  PETRA_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, plan.x.get(), plan.w.get(), plan.conv.get(),
                                                          plan.y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                          &returned, results.data()));
  return pick(results, returned, policy, "forward", plan.geometry);
}

conv_algorithm choose_backward_data(cudnnHandle_t handle, const conv_plan& plan, const conv_policy& policy) {
  plan.conv.set_math(policy.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  int returned = 0;
  PETRA_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      handle, plan.w.get(), plan.y.get(), plan.conv.get(), plan.x.get(),
      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, results.data()));
  return pick(results, returned, policy, "backward-data", plan.geometry);
}

conv_algorithm choose_backward_filter(cudnnHandle_t handle, const conv_plan& plan,
                                      const conv_policy& policy) {
  plan.conv.set_math(policy.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  int returned = 0;
  PETRA_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      handle, plan.x.get(), plan.y.get(), plan.conv.get(), plan.w.get(),
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, results.data()));
  return pick(results, returned, policy, "backward-filter", plan.geometry);
}

conv_plan& dnn_cache::conv(const conv_geometry& g) {
  auto& slot = conv_[g.key()];
  if (!slot) slot = std::make_unique<conv_plan>(g);
  return *slot;
}

batch_norm_plan& dnn_cache::batch_norm(int64_t n, int64_t c, int64_t h, int64_t w) {
  auto& slot = batch_norm_[{n, c, h, w}];
  if (!slot) slot = std::make_unique<batch_norm_plan>(n, c, h, w);
  return *slot;
}

}  // namespace petra::cuda

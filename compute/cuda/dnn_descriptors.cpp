// cuDNN descriptors and convolution algorithm choice.
#include "compute/cuda/dnn_descriptors.hpp"

#include <sstream>
#include <vector>

#include "compute/cuda/checks.hpp"

namespace petra::cuda {

namespace {

int extent(int64_t v) { return to_int("cudnn descriptor", "an extent", v); }

}  // namespace

std::string refusal(conv_direction d, const algorithm_candidate& c, const conv_policy& policy,
                    bool* tf32_only) {
  *tf32_only = false;
  if (c.status != CUDNN_STATUS_SUCCESS) return cudnnGetErrorString(c.status);
  if (c.memory > policy.max_workspace_bytes)
    return "needs " + std::to_string(c.memory >> 20) + " MiB of workspace";
  if (policy.deterministic && c.determinism != CUDNN_DETERMINISTIC) return "not deterministic";
  if (c.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return "down-converts to fp16";
  if (policy.bf16 && !forms_products_directly(d, c.algo)) return "Winograd or FFT transform";
  if (!policy.tf32 && !policy.bf16 && c.math == CUDNN_TENSOR_OP_MATH) *tf32_only = true;
  return "";
}

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

tensor_descriptor::tensor_descriptor(int64_t n, int64_t c, int64_t h, int64_t w, cudnnDataType_t type)
    : tensor_descriptor() {
  PETRA_CUDA_CHECK(
      cudnnSetTensor4dDescriptor(get(), CUDNN_TENSOR_NCHW, type, extent(n), extent(c), extent(h), extent(w)));
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

cudnnDataType_t tensor_descriptor::data_type() const {
  cudnnDataType_t type;
  int e[4], strides[4];
  PETRA_CUDA_CHECK(cudnnGetTensor4dDescriptor(get(), &type, &e[0], &e[1], &e[2], &e[3], &strides[0],
                                              &strides[1], &strides[2], &strides[3]));
  return type;
}

filter_descriptor::filter_descriptor(int64_t k, int64_t c, int64_t r, int64_t s, cudnnDataType_t type) {
  cudnnFilterDescriptor_t d = nullptr;
  PETRA_CUDA_CHECK(cudnnCreateFilterDescriptor(&d));
  desc_.reset(d);
  PETRA_CUDA_CHECK(
      cudnnSetFilter4dDescriptor(d, type, CUDNN_TENSOR_NCHW, extent(k), extent(c), extent(r), extent(s)));
}

cudnnDataType_t filter_descriptor::data_type() const {
  cudnnDataType_t type;
  cudnnTensorFormat_t format;
  int k = 0, c = 0, r = 0, s = 0;
  PETRA_CUDA_CHECK(cudnnGetFilter4dDescriptor(get(), &type, &format, &k, &c, &r, &s));
  return type;
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

conv_plan::conv_plan(const conv_geometry& g, cudnnDataType_t data)
    : geometry(g),
      data_type(data),
      x(g.n, g.c, g.h, g.w, data),
      y(g.n, g.k, g.p(), g.q(), data),
      bias(1, g.k, 1, 1),
      w(g.k, g.c, g.r, g.s, data),
      conv(g.stride, g.padding) {}

shape_t conv_plan::cudnn_output_shape() const {
  int n = 0, c = 0, h = 0, wd = 0;
  PETRA_CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &c, &h, &wd));
  return {n, c, h, wd};
}

batch_norm_plan::batch_norm_plan(int64_t n, int64_t c, int64_t h, int64_t w)
    : x(n, c, h, w), params(tensor_descriptor::batch_norm_parameters(x)) {}

cudnnMathType_t math_for(const conv_policy& policy, cudnnMathType_t chosen) {
  return policy.tf32 || policy.bf16 ? chosen : CUDNN_FMA_MATH;
}

const char* to_string(conv_direction d) {
  switch (d) {
    case conv_direction::forward:
      return "forward";
    case conv_direction::backward_data:
      return "backward-data";
    case conv_direction::backward_filter:
      return "backward-filter";
  }
  return "?";
}

bool forms_products_directly(conv_direction d, int algo) {
  switch (d) {
    case conv_direction::forward:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
    case conv_direction::backward_data:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    case conv_direction::backward_filter:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
  }
  return false;
}

conv_algorithm pick_algorithm(conv_direction d, const std::vector<algorithm_candidate>& candidates,
                              const conv_policy& policy, const conv_geometry& g) {
  std::optional<conv_algorithm> fallback;  // TF32 results when TF32 is off: run them in FMA math
  std::string refused;
  for (const algorithm_candidate& c : candidates) {
    bool tf32_only = false;
    const std::string why = refusal(d, c, policy, &tf32_only);
    if (!why.empty()) {
      refused += (refused.empty() ? "" : "; ") + std::string("algo ") + std::to_string(c.algo) + ": " + why;
      continue;
    }
    const conv_algorithm a{c.algo, c.math, c.memory};
    if (tf32_only) {
      if (!fallback) fallback = a;
      continue;
    }
    return a;
  }
  if (fallback) return *fallback;
  const char* type = policy.bf16 ? "bf16" : policy.tf32 ? "fp32 (TF32 math)" : "fp32";
  std::string message =
      std::string("cuDNN offers no ") + to_string(d) + " convolution algorithm for " + g.str() + " in " +
      type + " tensors with fp32 sums" + (policy.deterministic ? " that is deterministic" : "") +
      (policy.bf16 ? " and forms its products directly (no Winograd or FFT)" : "") + " within " +
      std::to_string(policy.max_workspace_bytes >> 20) + " MiB of workspace (cuDNN's " +
      std::to_string(candidates.size()) + " candidates: " + (refused.empty() ? "none" : refused) + "): ";
  message += policy.bf16 ? "run runtime.precision: bf16_emulated (the same bf16 operands on the fp32 paths), "
                           "turn runtime.deterministic off, or report the shape"
                         : "turn deterministic algorithms off or report the shape";
  throw std::runtime_error(message);
}

cudnnMathType_t query_math(const conv_policy& policy) {
  if (policy.bf16) return CUDNN_TENSOR_OP_MATH;
  return policy.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

std::vector<algorithm_candidate> heuristic_candidates(cudnnHandle_t handle, const conv_plan& plan,
                                                      const conv_policy& policy, conv_direction d) {
  plan.conv.set_math(query_math(policy));
  int returned = 0;
  switch (d) {
    case conv_direction::forward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> results(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      PETRA_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          handle, plan.x.get(), plan.w.get(), plan.conv.get(), plan.y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
          &returned, results.data()));
      return candidates_of(results, returned);
    }
    case conv_direction::backward_data: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
      PETRA_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          handle, plan.w.get(), plan.y.get(), plan.conv.get(), plan.x.get(),
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, results.data()));
      return candidates_of(results, returned);
    }
    case conv_direction::backward_filter: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
      PETRA_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          handle, plan.x.get(), plan.y.get(), plan.conv.get(), plan.w.get(),
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, results.data()));
      return candidates_of(results, returned);
    }
  }
  return {};
}

conv_plan& dnn_cache::conv(const conv_geometry& g) {
  auto& slot = conv_[g.key()];
  if (!slot) slot = std::make_unique<conv_plan>(g, conv_data_);
  return *slot;
}

batch_norm_plan& dnn_cache::batch_norm(int64_t n, int64_t c, int64_t h, int64_t w) {
  auto& slot = batch_norm_[{n, c, h, w}];
  if (!slot) slot = std::make_unique<batch_norm_plan>(n, c, h, w);
  return *slot;
}

}  // namespace petra::cuda

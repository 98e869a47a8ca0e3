// The thin layer over cuDNN's legacy API: RAII descriptors, one set per convolution or
// batch-norm shape, and convolution algorithms chosen once per shape (deterministic ones when
// asked). Descriptors need no GPU; choosing an algorithm does (it asks the handle), but the rule
// that picks one of cuDNN's candidates (pick_algorithm) does not.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "compute/conv_algorithms.hpp"
#include "compute/tensor.hpp"

namespace petra::cuda {

/// x (N,C,H,W) ⋆ w (K,C,R,S), stride and padding on both axes → y (N,K,P,Q).
struct conv_geometry {
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0;
  int stride = 1, padding = 0;

  int64_t p() const { return (h + 2 * padding - r) / stride + 1; }
  int64_t q() const { return (w + 2 * padding - s) / stride + 1; }
  shape_t x_shape() const { return {n, c, h, w}; }
  shape_t w_shape() const { return {k, c, r, s}; }
  shape_t y_shape() const { return {n, k, p(), q()}; }
  std::string str() const;
  std::array<int64_t, 9> key() const { return {n, c, h, w, k, r, s, stride, padding}; }
};

class tensor_descriptor {
 public:
  /// A packed NCHW descriptor of fp32 (or `type`) elements.
  tensor_descriptor(int64_t n, int64_t c, int64_t h, int64_t w, cudnnDataType_t type = CUDNN_DATA_FLOAT);
  /// The per-channel (1,C,1,1) descriptor cuDNN derives for batch-norm parameters of `x`.
  static tensor_descriptor batch_norm_parameters(const tensor_descriptor& x);
  cudnnTensorDescriptor_t get() const { return desc_.get(); }
  /// The extents cuDNN holds (for the tests).
  std::array<int, 4> extents() const;
  /// The element type cuDNN holds (for the tests).
  cudnnDataType_t data_type() const;

 private:
  tensor_descriptor();
  struct deleter {
    void operator()(cudnnTensorDescriptor_t d) const { cudnnDestroyTensorDescriptor(d); }
  };
  std::unique_ptr<std::remove_pointer_t<cudnnTensorDescriptor_t>, deleter> desc_;
};

class filter_descriptor {
 public:
  filter_descriptor(int64_t k, int64_t c, int64_t r, int64_t s, cudnnDataType_t type = CUDNN_DATA_FLOAT);
  cudnnFilterDescriptor_t get() const { return desc_.get(); }
  /// The element type cuDNN holds (for the tests).
  cudnnDataType_t data_type() const;

 private:
  struct deleter {
    void operator()(cudnnFilterDescriptor_t d) const { cudnnDestroyFilterDescriptor(d); }
  };
  std::unique_ptr<std::remove_pointer_t<cudnnFilterDescriptor_t>, deleter> desc_;
};

class convolution_descriptor {
 public:
  /// Cross-correlation (as PyTorch's Conv2d), fp32 accumulation.
  convolution_descriptor(int stride, int padding);
  cudnnConvolutionDescriptor_t get() const { return desc_.get(); }
  void set_math(cudnnMathType_t math) const;

 private:
  struct deleter {
    void operator()(cudnnConvolutionDescriptor_t d) const { cudnnDestroyConvolutionDescriptor(d); }
  };
  std::unique_ptr<std::remove_pointer_t<cudnnConvolutionDescriptor_t>, deleter> desc_;
};

/// One algorithm of one direction, with what running it takes.
struct conv_algorithm {
  int algo = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t, by direction
  cudnnMathType_t math = CUDNN_FMA_MATH;
  std::size_t workspace_bytes = 0;
};

/// Everything one convolution shape needs; the algorithms are chosen on first use. x, y and w
/// hold `data` elements (fp32, or bf16 for the tensor-core path: cuDNN's legacy API wants x, w and
/// y of one type, so a bf16 convolution also writes bf16); the bias and the arithmetic stay fp32.
struct conv_plan {
  explicit conv_plan(const conv_geometry& g, cudnnDataType_t data = CUDNN_DATA_FLOAT);
  /// The output extents cuDNN computes for the descriptors (checked against g.y_shape()).
  shape_t cudnn_output_shape() const;

  conv_geometry geometry;
  cudnnDataType_t data_type;
  tensor_descriptor x, y, bias;  // bias: (1,K,1,1), fp32
  filter_descriptor w;
  convolution_descriptor conv;
  std::optional<conv_algorithm> forward, backward_data, backward_filter;
};

struct batch_norm_plan {
  batch_norm_plan(int64_t n, int64_t c, int64_t h, int64_t w);
  tensor_descriptor x;       // x, y, dx and dy alike
  tensor_descriptor params;  // γ, β, means, variances: (1,C,1,1)
};

/// How a backend's convolutions choose algorithms.
struct conv_policy {
  bool tf32 = false;           // allow TF32 tensor-core math; otherwise CUDNN_FMA_MATH
  bool bf16 = false;           // bf16 tensors on tensor cores (fp32 sums), transform-free algorithms only
  bool deterministic = false;  // only algorithms cuDNN marks CUDNN_DETERMINISTIC
  std::size_t max_workspace_bytes = std::size_t{512} << 20;
  conv_search search = conv_search::heuristic;           // resolved: heuristic or timed
  std::shared_ptr<const conv_algorithm_table> recorded;  // choices to repeat first (null: none)
};

/// The math type a call runs with: the algorithm's own with TF32 or bf16, full fp32 FMA otherwise.
cudnnMathType_t math_for(const conv_policy& policy, cudnnMathType_t chosen);

enum class conv_direction { forward, backward_data, backward_filter };
const char* to_string(conv_direction d);

/// True when algorithm `algo` of `d` multiplies the operands as given: not Winograd or FFT, whose
/// transformed operands would be rounded to bf16 too (products no longer exact, beyond our bound).
bool forms_products_directly(conv_direction d, int algo);

/// One result of cuDNN's heuristics (cudnnConvolution*AlgoPerf_t), by direction-neutral fields.
struct algorithm_candidate {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  std::size_t memory = 0;
  cudnnDeterminism_t determinism = CUDNN_DETERMINISTIC;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  float time_ms = -1.f;  // a timed result's (cudnnFind*): cuDNN's time on the real operands
};

/// Why `c` is refused under `policy` ("" when it qualifies): it did not run, needs more workspace
/// than allowed, is not deterministic when asked, down-converts to fp16, or in bf16 transforms its
/// operands. `tf32_only`: it would qualify but for its TF32 math while TF32 is off.
std::string refusal(conv_direction d, const algorithm_candidate& c, const conv_policy& policy,
                    bool* tf32_only);

/// cuDNN's perf results (heuristic or timed), the first `returned`, by direction-neutral fields.
template <typename perf_t>
std::vector<algorithm_candidate> candidates_of(const std::vector<perf_t>& results, int returned) {
  std::vector<algorithm_candidate> out;
  for (int i = 0; i < returned && i < static_cast<int>(results.size()); ++i) {
    const perf_t& r = results[static_cast<std::size_t>(i)];
    out.push_back({static_cast<int>(r.algo), r.status, r.memory, r.determinism, r.mathType, r.time});
  }
  return out;
}

/// The first of `candidates` (best first) that ran, fits the workspace, is deterministic when
/// asked, does not down-convert to fp16, and in bf16 forms its products directly; with neither
/// TF32 nor bf16, a TF32 one only when nothing else qualifies (run in FMA math). None: a
/// std::runtime_error naming the direction, the shape, the data type and why each was refused.
conv_algorithm pick_algorithm(conv_direction d, const std::vector<algorithm_candidate>& candidates,
                              const conv_policy& policy, const conv_geometry& g);

/// The math type the algorithms of a `policy` backend are looked for with (set on the plan's
/// convolution descriptor before asking cuDNN): tensor-op math in bf16, cuDNN's default (TF32
/// allowed) in TF32, FMA otherwise.
cudnnMathType_t query_math(const conv_policy& policy);

/// cuDNN's heuristic candidates for direction `d` of `plan`, best first (cudnnGet*Algorithm_v7).
std::vector<algorithm_candidate> heuristic_candidates(cudnnHandle_t handle, const conv_plan& plan,
                                                      const conv_policy& policy, conv_direction d);

/// Plans by shape, created on first use and kept for the backend's life; convolutions of `conv_data`.
class dnn_cache {
 public:
  explicit dnn_cache(cudnnDataType_t conv_data = CUDNN_DATA_FLOAT) : conv_data_(conv_data) {}
  conv_plan& conv(const conv_geometry& g);
  batch_norm_plan& batch_norm(int64_t n, int64_t c, int64_t h, int64_t w);
  std::size_t conv_plans() const { return conv_.size(); }

 private:
  cudnnDataType_t conv_data_;
  std::map<std::array<int64_t, 9>, std::unique_ptr<conv_plan>> conv_;
  std::map<std::array<int64_t, 4>, std::unique_ptr<batch_norm_plan>> batch_norm_;
};

}  // namespace petra::cuda

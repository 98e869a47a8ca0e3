// The CPU backend: fp32 NCHW ops on host memory; convolutions and matrix products by oneDNN,
// the rest by OpenMP loops. Each op lives in the file named after its family. In bf16
// the convolutions and GEMMs round their operands to bf16 and sum in fp32 (compute/precision.hpp).
#pragma once

#include <memory>
#include <string>

#include "compute/backend.hpp"
#include "compute/cpu/host_pool.hpp"

namespace petra {

class conv2d_engine;

/// One backend is used by one thread at a time (the actor that owns it); its
/// ops run on `threads` OpenMP threads of the calling thread's team.
class cpu_backend final : public backend {
 public:
  explicit cpu_backend(int threads, math_precision precision = math_precision::fp32);
  ~cpu_backend() override;

  device where() const override { return device{}; }
  std::string name() const override;
  int threads() const { return threads_; }
  math_precision precision() const { return precision_; }

 private:
  // cpu_backend.cpp
  tensor empty_impl(const shape_t& shape) override;
  tensor zeros_impl(const shape_t& shape) override;
  tensor from_host_impl(const tensor& host) override;
  tensor to_host_impl(const tensor& t) override;
  void copy_impl(const tensor& src, tensor& dst) override;
  void fill_zero_impl(tensor& t) override;
  tensor gaussian_impl(const shape_t& shape, uint64_t key) override;
  void synchronize_impl() override;
  tensor export_for_impl(const tensor& t, const device& consumer) override;
  tensor import_impl(const tensor& t) override;

  // conv2d.cpp
  tensor conv2d_forward_impl(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) override;
  tensor conv2d_backward_data_impl(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                   conv2d_params p) override;
  void conv2d_backward_filter_impl(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                   tensor& db) override;
  /// Called by every op that writes into an existing tensor: the engine's copy of the
  /// last backward_filter's dy may no longer match it.
  void forget_staged_dy();

  // batch_norm.cpp
  tensor batch_norm_forward_train_impl(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                       batch_norm_saved& saved) override;
  void batch_norm_update_running_impl(const batch_norm_saved& saved, int64_t count_per_channel, float eps,
                                      float momentum, tensor& running_mean, tensor& running_var) override;
  tensor batch_norm_forward_eval_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                      const tensor& running_mean, const tensor& running_var,
                                      float eps) override;
  tensor batch_norm_backward_impl(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                                  const tensor& dy, tensor& dgamma, tensor& dbeta) override;

  // pointwise.cpp
  tensor relu_forward_impl(const tensor& x) override;
  tensor relu_backward_impl(const tensor& y, const tensor& dy) override;
  tensor add_impl(const tensor& a, const tensor& b) override;
  tensor sub_impl(const tensor& a, const tensor& b) override;
  void add_inplace_impl(tensor& a, const tensor& b) override;

  // pooling.cpp
  tensor max_pool2x2_forward_impl(const tensor& x) override;
  tensor max_pool2x2_backward_impl(const tensor& x, const tensor& dy) override;
  tensor global_avg_pool_forward_impl(const tensor& x) override;
  tensor global_avg_pool_backward_impl(const tensor& dy, const shape_t& x_shape) override;

  // forward_ops.cpp
  tensor max_pool2x2_jvp_impl(const tensor& x, const tensor& x_dot) override;

  // linear.cpp
  tensor linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) override;
  tensor linear_backward_data_impl(const tensor& dy, const tensor& w) override;
  void linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) override;

  // layer_norm.cpp
  tensor layer_norm_forward_impl(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                 layer_norm_saved& saved) override;
  tensor layer_norm_backward_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                  const tensor& dy, tensor& dgamma, tensor& dbeta) override;
  tensor layer_norm_jvp_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                             const tensor& x_dot) override;

  // tokens.cpp
  tensor gelu_forward_impl(const tensor& x) override;
  tensor gelu_backward_impl(const tensor& x, const tensor& dy) override;
  tensor softmax_forward_impl(const tensor& x) override;
  tensor softmax_backward_impl(const tensor& y, const tensor& dy) override;
  tensor batched_matmul_impl(const tensor& a, const tensor& b, bool transpose_a, bool transpose_b) override;
  std::pair<tensor, tensor> batched_matmul_backward_impl(const tensor& a, const tensor& b, const tensor& dc,
                                                         bool transpose_a, bool transpose_b) override;
  tensor token_mean_forward_impl(const tensor& x) override;
  tensor token_mean_backward_impl(const tensor& dy, const shape_t& x_shape) override;
  tensor scale_impl(const tensor& x, float alpha) override;
  tensor transpose12_impl(const tensor& x) override;
  /// c (B, M, N) ← op(a)·op(b) item by item (gemm_operand's rounding in bf16).
  void batched_gemm(const tensor& a, bool transpose_a, const tensor& b, bool transpose_b, tensor& c);

  // channels.cpp
  std::pair<tensor, tensor> split_channels_impl(const tensor& x) override;
  tensor concat_channels_impl(const tensor& a, const tensor& b) override;

  // loss.cpp
  float softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels, tensor* dlogits,
                                   int64_t* correct) override;

  // sgd.cpp
  void sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                       const sgd_update_params& p) override;
  // adamw.cpp
  void adamw_update_impl(tensor& w, const tensor& grad, tensor& m, tensor& v,
                         const adamw_update_params& p) override;

  /// A fresh, uninitialised output tensor from the recycling pool.
  tensor output(const shape_t& shape);

  // bf16_rounding.cpp
  /// A fresh pooled copy of `t` with each value rounded to the nearest bf16 (ties to even).
  tensor rounded_to_bf16(const tensor& t);
  /// A GEMM operand as linear uses it: rounded to bf16 in bf16 and bf16_emulated, else `t`.
  tensor gemm_operand(const tensor& t);
  /// A convolution operand as the engine gets it: rounded in bf16_emulated, else `t` (in bf16
  /// the engine's reorders to its bf16 layouts round).
  tensor conv_operand(const tensor& t);

  int threads_;
  math_precision precision_;
  std::shared_ptr<host_pool> pool_;
  std::unique_ptr<conv2d_engine> conv_;  // oneDNN engine, stream, primitive cache
  tensor staged_dy_;                     // the dy the engine holds reordered (conv2d.cpp)
};

}  // namespace petra

// The CUDA backend class: fp32 NCHW ops on one GPU, asynchronous on the backend's own stream.
// Convolutions and batch norm by cuDNN (legacy API), linear by cuBLAS, the rest by our kernels
// (kernels.cu). Each op lives in the file named after its family, as in compute/cpu/. In bf16 the
// convolutions and GEMMs read bf16 copies of their fp32 operands on tensor cores (conv2d_bf16.cpp,
// linear.cpp); every tensor stays fp32.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/cuda/dnn_descriptors.hpp"

namespace petra {

namespace cuda {
class device_context;
class device_storage;

/// A bf16 copy on the GPU: 2 bytes per element (an fp32's upper half), freed in stream order.
struct bf16_buffer {
  std::shared_ptr<device_storage> storage;
  uint16_t* data() const;
};
}  // namespace cuda

/// One backend is used by one thread at a time (the actor that owns it), on any thread: every
/// op first makes the backend's GPU current. Ops are queued on the backend's non-blocking stream
/// and return before the GPU has run them; to_host, export_for to the host, the loss (its
/// scalars) and synchronize() wait. Tensors move between backends only through export_for and
/// import (handover.cpp); every copy to or from the host goes through pinned memory.
class cuda_backend final : public backend {
 public:
  cuda_backend(int device_index, math_precision precision, bool deterministic,
               conv_search search = conv_search::automatic,
               std::shared_ptr<const conv_algorithm_table> recorded = nullptr);
  ~cuda_backend() override;

  device where() const override { return device{device_type::cuda, index_}; }
  std::string name() const override;
  cudaStream_t stream() const;
  /// How its convolutions choose algorithms (search resolved against determinism).
  const cuda::conv_policy& conv_policy() const { return policy_; }
  /// Convolution shapes seen so far (each with its descriptors and algorithms).
  std::size_t conv_plans() const { return dnn_.conv_plans(); }
  int64_t device_bytes_in_use() const override;

 private:
  // cuda_backend.cpp
  tensor empty_impl(const shape_t& shape) override;
  tensor zeros_impl(const shape_t& shape) override;
  void copy_impl(const tensor& src, tensor& dst) override;
  void fill_zero_impl(tensor& t) override;
  tensor gaussian_impl(const shape_t& shape, uint64_t key) override;
  void synchronize_impl() override;

  // handover.cpp: every copy between this GPU and anything else
  tensor from_host_impl(const tensor& host) override;
  tensor to_host_impl(const tensor& t) override;
  tensor export_for_impl(const tensor& t, const device& consumer) override;
  tensor import_impl(const tensor& t) override;

  // conv2d.cpp
  tensor conv2d_forward_impl(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) override;
  tensor conv2d_backward_data_impl(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                   conv2d_params p) override;
  void conv2d_backward_filter_impl(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                   tensor& db) override;

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
  tensor max_pool2x2_jvp_impl(const tensor& x, const tensor& x_dot) override;
  tensor global_avg_pool_forward_impl(const tensor& x) override;
  tensor global_avg_pool_backward_impl(const tensor& dy, const shape_t& x_shape) override;

  // linear.cpp
  tensor linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) override;
  tensor linear_backward_data_impl(const tensor& dy, const tensor& w) override;
  void linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) override;

  // token_ops.cpp
  tensor layer_norm_forward_impl(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                 layer_norm_saved& saved) override;
  tensor layer_norm_backward_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                  const tensor& dy, tensor& dgamma, tensor& dbeta) override;
  tensor layer_norm_jvp_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                             const tensor& x_dot) override;
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

  // channels.cpp
  std::pair<tensor, tensor> split_channels_impl(const tensor& x) override;
  tensor concat_channels_impl(const tensor& a, const tensor& b) override;

  // loss.cpp
  float softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels, tensor* dlogits,
                                   int64_t* correct) override;

  // loss.cpp
  deferred_loss softmax_cross_entropy_deferred_impl(const tensor& logits, const std::vector<int32_t>& labels,
                                                    tensor* dlogits) override;

  // sgd.cpp
  void sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                       const sgd_update_params& p) override;
  void sgd_step_impl(const std::vector<sgd_target>& targets, const sgd_update_params& p) override;
  void adamw_update_impl(tensor& w, const tensor& grad, tensor& m, tensor& v,
                         const adamw_update_params& p) override;

  /// Makes this backend's GPU current on the calling thread (every op starts here).
  void enter() const;
  /// A fresh, uninitialised tensor on this GPU.
  tensor output(const shape_t& shape);
  /// A convolution's or GEMM's operand on the fp32 paths: in bf16_emulated a fresh copy of `t`
  /// rounded to bf16 (ties to even, as the CPU rounds), else `t` (bf16_operands.cpp).
  tensor bf16_operand(const tensor& t);
  /// runtime.precision: bf16: convolutions and GEMMs on bf16 copies, on tensor cores.
  bool tensor_core_bf16() const { return precision_ == math_precision::bf16; }
  /// `t` converted to bf16 with the same rounding (bf16_operands.cpp).
  cuda::bf16_buffer to_bf16(const tensor& t);
  /// Uninitialised room for `count` bf16 values.
  cuda::bf16_buffer bf16_scratch(int64_t count);
  cuda::conv_plan& conv_plan_for(const shape_t& x_shape, const shape_t& w_shape, conv2d_params p);
  /// Device scratch for add_channel_sums' partial sums of (n, channels, area) (conv2d.cpp).
  std::shared_ptr<storage> channel_sum_scratch(int64_t n, int64_t channels, int64_t area);

  // conv2d_bf16.cpp: the convolutions in bf16 on tensor cores (the *_impl ops' bf16 branch).
  tensor conv2d_forward_bf16(const tensor& x, const tensor& w, const tensor& b, conv2d_params p);
  tensor conv2d_backward_data_bf16(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                   conv2d_params p);
  void conv2d_backward_filter_bf16(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                   tensor& db);

  /// linear.cpp: c (m, n) = op(a) (m, k) · op(b) (k, n) + beta · c, column-major as cuBLAS sees
  /// the row-major tensors. In bf16 cublasGemmEx on bf16 copies of a and b, fp32 c and fp32 sums
  /// (CUBLAS_COMPUTE_32F, tensor cores); otherwise cublasSgemm (on rounded operands in bf16_emulated).
  void gemm(cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const tensor& a, int lda,
            const tensor& b, int ldb, float beta, float* c, int ldc);
  /// token_ops.cpp: c (B, M, N) ← op(a)·op(b) per item by one strided batched GEMM, with gemm's
  /// precision rules (bf16: cublasGemmStridedBatchedEx on bf16 copies, fp32 c and sums).
  void batched_gemm(const char* op, const tensor& a, bool transpose_a, const tensor& b, bool transpose_b,
                    tensor& c);
  /// `host` (a host tensor) copied to this GPU through pinned memory; `staged`: copy it into a
  /// staging block first (the caller may change `host` afterwards), else a pinned `host` is
  /// read in place and kept alive until the copy has run.
  tensor upload(const tensor& host, bool staged);
  /// `t` (this GPU) in pinned host memory, once that copy has run.
  tensor download(const tensor& t);
  /// True when GPU `peer` can read this GPU's memory; the first time, grants it access to this
  /// GPU's memory pool and enables peer access (both are needed: see handover.cpp).
  bool reachable_from(int peer);

  int index_;
  math_precision precision_;
  cuda::conv_policy policy_;
  std::unique_ptr<cuda::device_context> context_;
  cuda::dnn_cache dnn_;
  std::map<int, bool> reachable_;  // by consumer GPU
  // sgd_step's table on the device (sgd.cpp), and the bytes it was uploaded from.
  std::shared_ptr<cuda::device_storage> sgd_table_;
  std::vector<char> sgd_table_bytes_;
};

}  // namespace petra

// The simulated-device backend `sim:N`: the CPU backend's kernels run on the device's worker
// thread, in this backend's stream order, while the caller goes on (docs/design.md §5). Its tensors
// refuse host access and use by another stream until handed over, so tests without a GPU
// exercise every hand-over path. The compute ops live in sim_ops.cpp, sim_elementwise_ops.cpp and
// sim_token_ops.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "compute/backend.hpp"

namespace petra {

class cpu_backend;
class sim_devices;

namespace sim {
class device_worker;
class stream;
}  // namespace sim

/// How a sim backend behaves beyond its kernels.
struct sim_options {
  int threads = 1;                // the CPU kernels' threads (bit-identical to a CPU backend with as many)
  int latency_us = 0;             // each op waits this long on the worker before it runs
  bool skip_import_wait = false;  // tests only: import does not wait for the producer's event
  math_precision precision = math_precision::fp32;  // the CPU kernels' (bit-identical to the CPU's)
};

/// One stream on a simulated device. Ops (their arguments checked by backend) allocate their
/// outputs and return at once; the worker fills the outputs later. to_host, export_for to a
/// non-sim device, the loss (its scalars) and synchronize() wait. A failed op fails the stream:
/// later calls report it.
class sim_backend final : public backend {
 public:
  sim_backend(std::shared_ptr<sim::device_worker> on, const sim_options& options);
  ~sim_backend() override;  // waits for the stream's queued work

  device where() const override;
  std::string name() const override;
  /// This backend's stream on its device (tensors remember the stream that made them).
  uint64_t stream_id() const;
  int64_t device_bytes_in_use() const override;

 private:
  // sim_backend.cpp: memory and hand-over
  tensor empty_impl(const shape_t& shape) override;
  tensor zeros_impl(const shape_t& shape) override;
  tensor from_host_impl(const tensor& host) override;
  tensor to_host_impl(const tensor& t) override;
  void copy_impl(const tensor& src, tensor& dst) override;
  void fill_zero_impl(tensor& t) override;
  void synchronize_impl() override;
  tensor export_for_impl(const tensor& t, const device& consumer) override;
  tensor import_impl(const tensor& t) override;

  // sim_ops.cpp
  tensor conv2d_forward_impl(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) override;
  tensor conv2d_backward_data_impl(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                   conv2d_params p) override;
  void conv2d_backward_filter_impl(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                   tensor& db) override;
  tensor batch_norm_forward_train_impl(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                       batch_norm_saved& saved) override;
  void batch_norm_update_running_impl(const batch_norm_saved& saved, int64_t count_per_channel, float eps,
                                      float momentum, tensor& running_mean, tensor& running_var) override;
  tensor batch_norm_forward_eval_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                      const tensor& running_mean, const tensor& running_var,
                                      float eps) override;
  tensor batch_norm_backward_impl(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                                  const tensor& dy, tensor& dgamma, tensor& dbeta) override;
  tensor linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) override;
  tensor linear_backward_data_impl(const tensor& dy, const tensor& w) override;
  void linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) override;

  // sim_token_ops.cpp
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

  // sim_elementwise_ops.cpp
  tensor relu_forward_impl(const tensor& x) override;
  tensor relu_backward_impl(const tensor& y, const tensor& dy) override;
  tensor add_impl(const tensor& a, const tensor& b) override;
  tensor sub_impl(const tensor& a, const tensor& b) override;
  void add_inplace_impl(tensor& a, const tensor& b) override;
  tensor max_pool2x2_forward_impl(const tensor& x) override;
  tensor max_pool2x2_backward_impl(const tensor& x, const tensor& dy) override;
  tensor max_pool2x2_jvp_impl(const tensor& x, const tensor& x_dot) override;
  tensor global_avg_pool_forward_impl(const tensor& x) override;
  tensor global_avg_pool_backward_impl(const tensor& dy, const shape_t& x_shape) override;
  std::pair<tensor, tensor> split_channels_impl(const tensor& x) override;
  tensor concat_channels_impl(const tensor& a, const tensor& b) override;
  float softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels, tensor* dlogits,
                                   int64_t* correct) override;
  void sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                       const sgd_update_params& p) override;
  void adamw_update_impl(tensor& w, const tensor& grad, tensor& m, tensor& v,
                         const adamw_update_params& p) override;

  /// A fresh tensor of this device owned by this stream; its values come later.
  tensor output(const shape_t& shape);
  /// A tensor of this device that this stream neither made nor imported is refused: its
  /// hand-over is missing.
  void check_usable(const char* op, const char* name, const tensor& t) const override;
  /// Queues `work` (given the CPU backend that runs the kernels) on this stream.
  uint64_t enqueue(std::function<void(cpu_backend&)> work);
  /// A host copy of `t`, once the worker has reached this point.
  tensor download(const tensor& t);

  std::shared_ptr<sim::device_worker> device_;
  std::shared_ptr<sim::stream> stream_;
  sim_options options_;
  std::unique_ptr<cpu_backend> kernels_;  // used on the worker only
};

/// A backend on `sim:index` of `devices`.
std::unique_ptr<backend> make_sim_backend(sim_devices& devices, int index, const sim_options& options);

}  // namespace petra

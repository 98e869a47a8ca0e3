// The simulated-device backend `sim:N`: the CPU backend's kernels run on the device's worker
// thread, in this backend's stream order, while the caller goes on (DESIGN.md §5). Its tensors
// refuse host access and use by another stream until handed over, so tests without a GPU
// exercise every hand-over path. The compute ops live in sim_ops.cpp and sim_elementwise_ops.cpp.
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
};

/// One stream on a simulated device. Ops check their arguments, allocate their outputs and return
/// at once; the worker fills the outputs later. to_host, export_for to a non-sim device, the loss
/// (its scalars) and synchronize() wait. A failed op fails the stream: later calls report it.
class sim_backend final : public backend {
 public:
  sim_backend(std::shared_ptr<sim::device_worker> on, const sim_options& options);
  ~sim_backend() override;  // waits for the stream's queued work

  device where() const override;
  std::string name() const override;
  /// This backend's stream on its device (tensors remember the stream that made them).
  uint64_t stream_id() const;

  // sim_backend.cpp: memory and hand-over
  tensor empty(const shape_t& shape) override;
  tensor zeros(const shape_t& shape) override;
  tensor from_host(const tensor& host) override;
  tensor to_host(const tensor& t) override;
  void copy(const tensor& src, tensor& dst) override;
  void fill_zero(tensor& t) override;
  void synchronize() override;
  int64_t device_bytes_in_use() const override;
  tensor export_for(const tensor& t, const device& consumer) override;
  tensor import(const tensor& t) override;

  // sim_ops.cpp
  tensor conv2d_forward(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) override;
  tensor conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                              conv2d_params p) override;
  void conv2d_backward_filter(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                              tensor& db) override;
  tensor batch_norm_forward_train(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                  batch_norm_saved& saved) override;
  void batch_norm_update_running(const batch_norm_saved& saved, int64_t count_per_channel, float eps,
                                 float momentum, tensor& running_mean, tensor& running_var) override;
  tensor batch_norm_forward_eval(const tensor& x, const tensor& gamma, const tensor& beta,
                                 const tensor& running_mean, const tensor& running_var, float eps) override;
  tensor batch_norm_backward(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                             const tensor& dy, tensor& dgamma, tensor& dbeta) override;
  tensor linear_forward(const tensor& x, const tensor& w, const tensor& b) override;
  tensor linear_backward_data(const tensor& dy, const tensor& w) override;
  void linear_backward_weight(const tensor& x, const tensor& dy, tensor& dw, tensor& db) override;

  // sim_elementwise_ops.cpp
  tensor relu_forward(const tensor& x) override;
  tensor relu_backward(const tensor& y, const tensor& dy) override;
  tensor add(const tensor& a, const tensor& b) override;
  tensor sub(const tensor& a, const tensor& b) override;
  void add_inplace(tensor& a, const tensor& b) override;
  tensor max_pool2x2_forward(const tensor& x) override;
  tensor max_pool2x2_backward(const tensor& x, const tensor& dy) override;
  tensor global_avg_pool_forward(const tensor& x) override;
  tensor global_avg_pool_backward(const tensor& dy, const shape_t& x_shape) override;
  std::pair<tensor, tensor> split_channels(const tensor& x) override;
  tensor concat_channels(const tensor& a, const tensor& b) override;
  float softmax_cross_entropy(const tensor& logits, const std::vector<int32_t>& labels, tensor* dlogits,
                              int64_t* correct) override;
  void sgd_update(tensor& w, const tensor& grad, tensor& momentum_buffer,
                  const sgd_update_params& p) override;

 private:
  /// A fresh tensor of this device owned by this stream; its values come later.
  tensor output(const shape_t& shape);
  /// `t` is defined, on this device, made or imported by this stream, and (rank ≥ 0) of that rank.
  void require(const char* op, const char* name, const tensor& t, int rank = -1) const;
  /// As require, for an argument that may be undefined.
  void require_optional(const char* op, const char* name, const tensor& t, int rank = -1) const;
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

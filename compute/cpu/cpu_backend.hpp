// The CPU backend: fp32 NCHW ops on host memory; convolutions by oneDNN, linear by
// OpenBLAS, the rest by OpenMP loops. Each op lives in the file named after its family.
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
  explicit cpu_backend(int threads);
  ~cpu_backend() override;

  device where() const override { return device{}; }
  std::string name() const override;
  int threads() const { return threads_; }

  // cpu_backend.cpp
  tensor empty(const shape_t& shape) override;
  tensor zeros(const shape_t& shape) override;
  tensor from_host(const tensor& host) override;
  tensor to_host(const tensor& t) override;
  void copy(const tensor& src, tensor& dst) override;
  void fill_zero(tensor& t) override;
  void synchronize() override;
  tensor export_for(const tensor& t, const device& consumer) override;
  tensor import(const tensor& t) override;

  // conv2d.cpp
  tensor conv2d_forward(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) override;
  tensor conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                              conv2d_params p) override;
  void conv2d_backward_filter(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                              tensor& db) override;

  // batch_norm.cpp
  tensor batch_norm_forward_train(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                  batch_norm_saved& saved) override;
  void batch_norm_update_running(const batch_norm_saved& saved, int64_t count_per_channel, float eps,
                                 float momentum, tensor& running_mean, tensor& running_var) override;
  tensor batch_norm_forward_eval(const tensor& x, const tensor& gamma, const tensor& beta,
                                 const tensor& running_mean, const tensor& running_var, float eps) override;
  tensor batch_norm_backward(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                             const tensor& dy, tensor& dgamma, tensor& dbeta) override;

  // pointwise.cpp
  tensor relu_forward(const tensor& x) override;
  tensor relu_backward(const tensor& y, const tensor& dy) override;
  tensor add(const tensor& a, const tensor& b) override;
  tensor sub(const tensor& a, const tensor& b) override;
  void add_inplace(tensor& a, const tensor& b) override;

  // pooling.cpp
  tensor max_pool2x2_forward(const tensor& x) override;
  tensor max_pool2x2_backward(const tensor& x, const tensor& dy) override;
  tensor global_avg_pool_forward(const tensor& x) override;
  tensor global_avg_pool_backward(const tensor& dy, const shape_t& x_shape) override;

  // linear.cpp
  tensor linear_forward(const tensor& x, const tensor& w, const tensor& b) override;
  tensor linear_backward_data(const tensor& dy, const tensor& w) override;
  void linear_backward_weight(const tensor& x, const tensor& dy, tensor& dw, tensor& db) override;

  // channels.cpp
  std::pair<tensor, tensor> split_channels(const tensor& x) override;
  tensor concat_channels(const tensor& a, const tensor& b) override;

  // loss.cpp
  float softmax_cross_entropy(const tensor& logits, const std::vector<int32_t>& labels, tensor* dlogits,
                              int64_t* correct) override;

  // sgd.cpp
  void sgd_update(tensor& w, const tensor& grad, tensor& momentum_buffer,
                  const sgd_update_params& p) override;

 private:
  /// A fresh, uninitialised output tensor from the recycling pool.
  tensor output(const shape_t& shape);

  int threads_;
  std::shared_ptr<host_pool> pool_;
  std::unique_ptr<conv2d_engine> conv_;  // oneDNN engine, stream, primitive cache
};

}  // namespace petra

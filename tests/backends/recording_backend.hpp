// A backend that names every op it is asked for and has the CPU compute it: run over the op table,
// it shows which ops of the interface the table calls. It overrides every *_impl of the interface,
// so an op added there does not compile here until it is named (and then the table must call it).
#pragma once

#include <memory>
#include <set>
#include <string>

#include "compute/backend.hpp"

namespace petra::testing {

class recording_backend final : public backend {
 public:
  std::set<std::string> called;  // the ops called so far

  device where() const override { return cpu_->where(); }
  std::string name() const override { return "recording " + cpu_->name(); }
  int64_t device_bytes_in_use() const override { return cpu_->device_bytes_in_use(); }

 private:
  tensor empty_impl(const shape_t& shape) override { return note("empty").empty(shape); }
  tensor zeros_impl(const shape_t& shape) override { return note("zeros").zeros(shape); }
  tensor from_host_impl(const tensor& host) override { return note("from_host").from_host(host); }
  tensor to_host_impl(const tensor& t) override { return note("to_host").to_host(t); }
  void copy_impl(const tensor& src, tensor& dst) override { note("copy").copy(src, dst); }
  void fill_zero_impl(tensor& t) override { note("fill_zero").fill_zero(t); }
  void synchronize_impl() override { note("synchronize").synchronize(); }
  tensor export_for_impl(const tensor& t, const device& consumer) override {
    return note("export_for").export_for(t, consumer);
  }
  tensor import_impl(const tensor& t) override { return note("import").import(t); }

  tensor conv2d_forward_impl(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) override {
    return note("conv2d_forward").conv2d_forward(x, w, b, p);
  }
  tensor conv2d_backward_data_impl(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                   conv2d_params p) override {
    return note("conv2d_backward_data").conv2d_backward_data(dy, w, x_shape, p);
  }
  void conv2d_backward_filter_impl(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                   tensor& db) override {
    note("conv2d_backward_filter").conv2d_backward_filter(x, dy, p, dw, db);
  }
  tensor batch_norm_forward_train_impl(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                       batch_norm_saved& saved) override {
    return note("batch_norm_forward_train").batch_norm_forward_train(x, gamma, beta, eps, saved);
  }
  void batch_norm_update_running_impl(const batch_norm_saved& saved, int64_t count_per_channel, float eps,
                                      float momentum, tensor& running_mean, tensor& running_var) override {
    note("batch_norm_update_running")
        .batch_norm_update_running(saved, count_per_channel, eps, momentum, running_mean, running_var);
  }
  tensor batch_norm_forward_eval_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                      const tensor& running_mean, const tensor& running_var,
                                      float eps) override {
    return note("batch_norm_forward_eval")
        .batch_norm_forward_eval(x, gamma, beta, running_mean, running_var, eps);
  }
  tensor batch_norm_backward_impl(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                                  const tensor& dy, tensor& dgamma, tensor& dbeta) override {
    return note("batch_norm_backward").batch_norm_backward(x, gamma, saved, dy, dgamma, dbeta);
  }

  tensor relu_forward_impl(const tensor& x) override { return note("relu_forward").relu_forward(x); }
  tensor relu_backward_impl(const tensor& y, const tensor& dy) override {
    return note("relu_backward").relu_backward(y, dy);
  }
  tensor add_impl(const tensor& a, const tensor& b) override { return note("add").add(a, b); }
  tensor sub_impl(const tensor& a, const tensor& b) override { return note("sub").sub(a, b); }
  void add_inplace_impl(tensor& a, const tensor& b) override { note("add_inplace").add_inplace(a, b); }
  tensor max_pool2x2_forward_impl(const tensor& x) override {
    return note("max_pool2x2_forward").max_pool2x2_forward(x);
  }
  tensor max_pool2x2_backward_impl(const tensor& x, const tensor& dy) override {
    return note("max_pool2x2_backward").max_pool2x2_backward(x, dy);
  }
  tensor max_pool2x2_jvp_impl(const tensor& x, const tensor& x_dot) override {
    return note("max_pool2x2_jvp").max_pool2x2_jvp(x, x_dot);
  }
  tensor global_avg_pool_forward_impl(const tensor& x) override {
    return note("global_avg_pool_forward").global_avg_pool_forward(x);
  }
  tensor global_avg_pool_backward_impl(const tensor& dy, const shape_t& x_shape) override {
    return note("global_avg_pool_backward").global_avg_pool_backward(dy, x_shape);
  }

  tensor linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) override {
    return note("linear_forward").linear_forward(x, w, b);
  }
  tensor linear_backward_data_impl(const tensor& dy, const tensor& w) override {
    return note("linear_backward_data").linear_backward_data(dy, w);
  }
  void linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) override {
    note("linear_backward_weight").linear_backward_weight(x, dy, dw, db);
  }
  tensor layer_norm_forward_impl(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                 layer_norm_saved& saved) override {
    return note("layer_norm_forward").layer_norm_forward(x, gamma, beta, eps, saved);
  }
  tensor layer_norm_backward_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                  const tensor& dy, tensor& dgamma, tensor& dbeta) override {
    return note("layer_norm_backward").layer_norm_backward(x, gamma, saved, dy, dgamma, dbeta);
  }
  tensor layer_norm_jvp_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                             const tensor& x_dot) override {
    return note("layer_norm_jvp").layer_norm_jvp(x, gamma, saved, x_dot);
  }
  tensor gelu_forward_impl(const tensor& x) override { return note("gelu_forward").gelu_forward(x); }
  tensor gelu_backward_impl(const tensor& x, const tensor& dy) override {
    return note("gelu_backward").gelu_backward(x, dy);
  }
  tensor softmax_forward_impl(const tensor& x) override { return note("softmax_forward").softmax_forward(x); }
  tensor softmax_backward_impl(const tensor& y, const tensor& dy) override {
    return note("softmax_backward").softmax_backward(y, dy);
  }
  tensor batched_matmul_impl(const tensor& a, const tensor& b, bool transpose_a, bool transpose_b) override {
    return note("batched_matmul").batched_matmul(a, b, transpose_a, transpose_b);
  }
  std::pair<tensor, tensor> batched_matmul_backward_impl(const tensor& a, const tensor& b, const tensor& dc,
                                                         bool transpose_a, bool transpose_b) override {
    return note("batched_matmul_backward").batched_matmul_backward(a, b, dc, transpose_a, transpose_b);
  }
  tensor token_mean_forward_impl(const tensor& x) override {
    return note("token_mean_forward").token_mean_forward(x);
  }
  tensor token_mean_backward_impl(const tensor& dy, const shape_t& x_shape) override {
    return note("token_mean_backward").token_mean_backward(dy, x_shape);
  }
  tensor scale_impl(const tensor& x, float alpha) override { return note("scale").scale(x, alpha); }
  tensor transpose12_impl(const tensor& x) override { return note("transpose12").transpose12(x); }
  std::pair<tensor, tensor> split_channels_impl(const tensor& x) override {
    return note("split_channels").split_channels(x);
  }
  tensor concat_channels_impl(const tensor& a, const tensor& b) override {
    return note("concat_channels").concat_channels(a, b);
  }
  float softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels, tensor* dlogits,
                                   int64_t* correct) override {
    return note("softmax_cross_entropy").softmax_cross_entropy(logits, labels, dlogits, correct);
  }
  void sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                       const sgd_update_params& p) override {
    note("sgd_update").sgd_update(w, grad, momentum_buffer, p);
  }
  deferred_loss softmax_cross_entropy_deferred_impl(const tensor& logits, const std::vector<int32_t>& labels,
                                                    tensor* dlogits) override {
    return note("softmax_cross_entropy_deferred").softmax_cross_entropy_deferred(logits, labels, dlogits);
  }
  void sgd_step_impl(const std::vector<sgd_target>& targets, const sgd_update_params& p) override {
    note("sgd_step").sgd_step(targets, p);
  }
  void adamw_update_impl(tensor& w, const tensor& grad, tensor& m, tensor& v,
                         const adamw_update_params& p) override {
    note("adamw_update").adamw_update(w, grad, m, v, p);
  }
  void adamw_step_impl(const std::vector<adamw_target>& targets, const adamw_update_params& p) override {
    note("adamw_step").adamw_step(targets, p);
  }

  backend& note(const char* op) {
    called.insert(op);
    return *cpu_;
  }

  std::unique_ptr<backend> cpu_ = make_cpu_backend(1);
};

}  // namespace petra::testing

// BatchNorm2d layer: γ, β, running mean/var; momentum 0.1, eps 1e-5 (PyTorch's defaults).
#pragma once

#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/forward/tangents.hpp"
#include "compute/parameter.hpp"
#include "compute/tape.hpp"

namespace petra {

class batch_norm_layer {
 public:
  batch_norm_layer(backend& be, const std::string& name, int channels);

  /// train: batch statistics and one running-statistics update; recompute: batch
  /// statistics only; eval: running statistics; calibrate: batch statistics, and the running
  /// statistics become the mean of those of the calibrate passes since the last other pass (the
  /// first replaces them). With a tape, pushes x, μ_B, inv_std.
  tensor forward(const tensor& x, pass mode, tape* t) { return forward_on(be_, x, mode, t); }
  /// The same forward run by `on`, a second stream of this layer's device (an overlapped rebuild).
  tensor forward_on(backend& on, const tensor& x, pass mode, tape* t);
  /// Pops what forward pushed; dγ += Σ dy·x̂, dβ += Σ dy; returns dx.
  tensor backward(tape& t, const tensor& dy);
  /// Forward mode (layer_jvps.cpp): y as forward (and its tape, and its running-statistics
  /// update); ẏ with the batch statistics' tangents in train and recompute.
  std::pair<tensor, tensor> jvp(const tensor& x, const tensor& x_dot, pass mode, tape* t,
                                const parameter_tangents& theta_dot);

  void collect(std::vector<parameter*>& out) {
    out.push_back(&gamma_);
    out.push_back(&beta_);
  }
  void collect_buffers(std::vector<buffer_ref>& out);

  static constexpr float eps = 1e-5f;
  static constexpr float momentum = 0.1f;

 private:
  backend& be_;
  std::string name_;
  parameter gamma_;
  parameter beta_;
  tensor running_mean_;
  tensor running_var_;
  int64_t calibrated_ = 0;  // calibrate passes since the last other pass
};

/// ReLU with its output kept on the tape (the backward needs y > 0 only).
tensor relu_forward(backend& be, const tensor& x, tape* t);
tensor relu_backward(backend& be, tape& t, const tensor& dy);
/// Forward mode (layer_jvps.cpp): y as relu_forward, ẏ = ẋ·[y > 0].
std::pair<tensor, tensor> relu_jvp(backend& be, const tensor& x, const tensor& x_dot, tape* t);

}  // namespace petra

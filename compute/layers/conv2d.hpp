// Conv2d layer: owns weight (K,C,R,S) and bias (K); forward keeps its input on a tape.
#pragma once

#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/forward/tangents.hpp"
#include "compute/parameter.hpp"
#include "compute/tape.hpp"

namespace petra {

class conv2d_layer {
 public:
  conv2d_layer(backend& be, const std::string& name, int in_channels, int out_channels, int kernel,
               int stride, int padding, uint64_t seed);

  /// y = x ⋆ w + b. With a tape, pushes x.
  tensor forward(const tensor& x, tape* t) { return forward_on(be_, x, t); }
  /// The same forward run by `on`, a second stream of this layer's device (an overlapped rebuild).
  tensor forward_on(backend& on, const tensor& x, tape* t);
  /// Pops x; dw += x ⋆ dy, db += Σ dy; returns dx (skipped, undefined, when !need_dx).
  tensor backward(tape& t, const tensor& dy, bool need_dx = true);
  /// Forward mode (layer_jvps.cpp): y as forward (and its tape), ẏ = ẋ ⋆ w + x ⋆ ẇ + ḃ.
  std::pair<tensor, tensor> jvp(const tensor& x, const tensor& x_dot, tape* t,
                                const parameter_tangents& theta_dot);

  void collect(std::vector<parameter*>& out) {
    out.push_back(&weight_);
    out.push_back(&bias_);
  }
  shape_t output_shape(const shape_t& x) const;

 private:
  backend& be_;
  parameter weight_;
  parameter bias_;
  conv2d_params params_;
};

}  // namespace petra

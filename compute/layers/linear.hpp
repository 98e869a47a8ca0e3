// Linear layer: weight (O,I), bias (O).
#pragma once

#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/forward/tangents.hpp"
#include "compute/parameter.hpp"
#include "compute/tape.hpp"

namespace petra {

class linear_layer {
 public:
  linear_layer(backend& be, const std::string& name, int in_features, int out_features, uint64_t seed);

  /// y = x·wᵀ + b. With a tape, pushes x.
  tensor forward(const tensor& x, tape* t);
  /// Pops x; dw += dyᵀ·x, db += Σ dy; returns dx.
  tensor backward(tape& t, const tensor& dy);
  /// Forward mode (layer_jvps.cpp): y as forward (and its tape), ẏ = ẋ·wᵀ + x·ẇᵀ + ḃ.
  std::pair<tensor, tensor> jvp(const tensor& x, const tensor& x_dot, tape* t,
                                const parameter_tangents& theta_dot);

  void collect(std::vector<parameter*>& out) {
    out.push_back(&weight_);
    out.push_back(&bias_);
  }
  int out_features() const { return static_cast<int>(weight_.value.dim(0)); }

 private:
  backend& be_;
  parameter weight_;
  parameter bias_;
};

}  // namespace petra

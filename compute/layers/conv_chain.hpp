// A chain of conv → BN (→ ReLU) units: the residual functions F of couplings
// (basic: two 3×3 units; bottleneck: 1×1, 3×3, 1×1) and the projection branches.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compute/layers/batch_norm.hpp"
#include "compute/layers/conv2d.hpp"

namespace petra {

/// One unit: y = [ReLU](BN(conv(x))).
struct conv_unit_spec {
  int in_channels;
  int out_channels;
  int kernel;
  int stride;
  bool relu;
};

class conv_chain {
 public:
  conv_chain(backend& be, const std::string& name, const std::vector<conv_unit_spec>& units, uint64_t seed);

  tensor forward(const tensor& x, pass mode, tape* t) { return forward_on(be_, x, mode, t); }
  /// The same forward run by `on`, a second stream of the chain's device (an overlapped rebuild).
  tensor forward_on(backend& on, const tensor& x, pass mode, tape* t);
  /// Pops the chain's tape entries; returns dx (undefined when !need_dx).
  tensor backward(tape& t, const tensor& dy, bool need_dx = true);
  /// Forward mode (layer_jvps.cpp): y as forward (and its tape), ẏ along ẋ and θ̇.
  std::pair<tensor, tensor> jvp(const tensor& x, const tensor& x_dot, pass mode, tape* t,
                                const parameter_tangents& theta_dot);

  void collect(std::vector<parameter*>& out);
  void collect_buffers(std::vector<buffer_ref>& out);
  shape_t output_shape(const shape_t& x) const;

  /// Basic F: 3×3 (c→c) → BN → ReLU → 3×3 (c→c) → BN → ReLU.
  static std::vector<conv_unit_spec> basic(int channels);
  /// Bottleneck F: 1×1 (in→h) → BN → ReLU → 3×3 stride s (h→h) → BN → ReLU → 1×1 (h→out) → BN → ReLU.
  static std::vector<conv_unit_spec> bottleneck(int in, int hidden, int out, int stride);

 private:
  struct unit {
    conv2d_layer conv;
    batch_norm_layer bn;
    bool relu;
  };
  backend& be_;
  std::vector<std::unique_ptr<unit>> units_;
};

}  // namespace petra

// Coupling (reversible, stride 1): (x1, x2) → (y1, y2) = (x2 + F(x1), x1); inverse x1 = y2, x2 = y1 − F(y2).
#pragma once

#include "compute/blocks/block.hpp"
#include "compute/layers/conv_chain.hpp"

namespace petra {

class coupling_block : public block {
 public:
  /// `f` maps width → width at stride 1 (conv_chain::basic or ::bottleneck with in = out).
  coupling_block(backend& be, const std::string& name, const std::vector<conv_unit_spec>& f, uint64_t seed);

  std::string kind() const override { return "coupling"; }
  bool reversible() const override { return true; }
  activation forward(const activation& x, pass mode, tape* t) override;
  /// dx1 = dy2 + J_F(x1)ᵀ dy1, dx2 = dy1.
  activation backward(tape& t, const activation& dy) override;
  activation inverse(const activation& y) override;
  /// x1 = y2, x2 = y1 − F(y2), with F's graph kept on `t`.
  activation rebuild_input(backend& on, const activation& y, tape& t) override;
  std::pair<activation, activation> backward_from_output(const activation& y, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override { return x; }
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override;

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;
  backend& be_;
  conv_chain f_;
};

}  // namespace petra

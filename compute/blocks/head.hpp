// Head: concat(x1, x2) → global average pool → linear → logits (the loss is the loss actor's).
#pragma once

#include "compute/blocks/block.hpp"
#include "compute/layers/linear.hpp"

namespace petra {

class head_block : public block {
 public:
  head_block(backend& be, const std::string& name, int stream_width, int num_classes, uint64_t seed);

  std::string kind() const override { return "head"; }
  activation forward(const activation& x, pass mode, tape* t) override;
  activation backward(tape& t, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override;
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override { return {}; }

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;
  backend& be_;
  linear_layer fc_;
};

}  // namespace petra

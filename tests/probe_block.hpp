// A block for tests of what runs a stage rather than of its math: its forward calls `on_forward`
// (a wait, a barrier, a failure) and hands its input on; its backward hands the gradient on. No
// parameters, no buffers.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compute/blocks/block.hpp"

namespace petra::testing {

class probe_block : public block {
 public:
  probe_block(std::string name, std::function<void()> on_forward)
      : block(std::move(name)), on_forward_(std::move(on_forward)) {}
  std::string kind() const override { return "stem"; }
  activation forward(const activation& x, pass, tape*) override {
    on_forward_();
    return x;
  }
  activation backward(tape&, const activation& dy) override { return dy; }
  activation_shape output_shape(const activation_shape& x) const override { return x; }
  std::vector<parameter*> parameters() override { return {}; }
  std::vector<buffer_ref> buffers() override { return {}; }

 private:
  std::function<void()> on_forward_;
};

}  // namespace petra::testing

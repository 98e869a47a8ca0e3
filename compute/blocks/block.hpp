// Block: one unit of a network (a RevNet's stem, coupling, downsampling, head; a RevViT's patch stem,
// transformer block, token head), the grain of pipeline stages.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compute/backend.hpp"
#include "compute/forward/tangents.hpp"
#include "compute/parameter.hpp"
#include "compute/tape.hpp"

namespace petra {

class block {
 public:
  virtual ~block() = default;

  /// "stem", "coupling", "downsample", "transformer" or "head".
  virtual std::string kind() const = 0;
  const std::string& name() const { return name_; }

  /// y = F(x). With a tape, keeps what backward needs.
  virtual activation forward(const activation& x, pass mode, tape* t) = 0;
  /// dx from the tape of a forward; parameter gradients accumulate (+=).
  virtual activation backward(tape& t, const activation& dy) = 0;
  /// Forward mode: (y, ẏ), ẏ = J_x ẋ + J_θ θ̇ along the input tangent ẋ and the parameter tangents
  /// θ̇ (a stream or parameter without one: zero). y, the tape and the running statistics are the
  /// forward's exactly, so a backward may follow. A zero stream of ẏ may come back undefined.
  std::pair<activation, activation> jvp(const activation& x, const activation& x_dot, pass mode, tape* t,
                                        const parameter_tangents& theta_dot = {});

  virtual bool reversible() const { return false; }
  /// x = F⁻¹(y) with the current weights and batch statistics (reversible blocks only).
  virtual activation inverse(const activation& y);
  /// x = F⁻¹(y) computed by `on` (this block's backend or a second stream of its device), keeping
  /// on `t` what backward(t, dy) needs, so that the gradient recomputes nothing (reversible blocks).
  virtual activation rebuild_input(backend& on, const activation& y, tape& t);
  /// Rebuilds x from y and differentiates at it in one pass (≈ one forward and one
  /// backward of F): returns (x, dx); parameter gradients accumulate. It is rebuild_input on the
  /// block's own backend followed by backward on its tape.
  virtual std::pair<activation, activation> backward_from_output(const activation& y, const activation& dy);

  virtual activation_shape output_shape(const activation_shape& x) const = 0;
  virtual std::vector<parameter*> parameters() = 0;
  virtual std::vector<buffer_ref> buffers() = 0;

 protected:
  explicit block(std::string name) : name_(std::move(name)) {}

 private:
  /// jvp once its arguments are checked. By default a block has no forward mode (test doubles):
  /// it says so, naming itself.
  virtual std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode,
                                                     tape* t, const parameter_tangents& theta_dot);

  std::string name_;
};

/// Checks that `x` has the stream structure a block expects, naming the block.
void expect_streams(const block& b, const activation& x, bool two_streams, const char* what);

}  // namespace petra

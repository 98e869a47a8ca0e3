// Tangents for forward mode: a direction in parameter space, one tensor per parameter. A
// parameter without one has a zero tangent, so a direction may touch a single block.
#pragma once

#include <unordered_map>
#include <utility>

#include "compute/parameter.hpp"

namespace petra {

/// θ̇: the tangent of some parameters, each of its parameter's shape and device.
class parameter_tangents {
 public:
  void set(const parameter& p, tensor tangent) { by_parameter_[&p] = std::move(tangent); }
  /// θ̇ of `p`: undefined (zero) when none was set.
  tensor of(const parameter& p) const {
    const auto found = by_parameter_.find(&p);
    return found == by_parameter_.end() ? tensor{} : found->second;
  }
  bool empty() const { return by_parameter_.empty(); }

 private:
  std::unordered_map<const parameter*, tensor> by_parameter_;
};

}  // namespace petra

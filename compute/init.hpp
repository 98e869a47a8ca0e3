// Seeded parameter initialisation, as PyTorch's defaults (Kaiming-uniform a=√5, uniform bias), and
// ViTs' truncated normal.
#pragma once

#include <cstdint>
#include <string>

#include "compute/tensor.hpp"

namespace petra {

/// A deterministic stream of uniform numbers keyed by (seed, name): the same
/// parameter gets the same values whatever else the model holds.
class init_rng {
 public:
  init_rng(uint64_t seed, const std::string& name);
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi);

 private:
  uint64_t state_;
};

/// Host tensor of `shape` with values U(−1/√fan_in, 1/√fan_in): PyTorch's default
/// for conv/linear weights (Kaiming-uniform, a = √5) and their biases alike.
tensor uniform_fan_in(const shape_t& shape, int64_t fan_in, uint64_t seed, const std::string& name);

/// Host tensor of `shape` with values drawn from N(0, std²) truncated to ±2·std (redrawn beyond):
/// ViTs' initialisation of linear weights and position embeddings (std 0.02).
tensor truncated_normal(const shape_t& shape, float std, uint64_t seed, const std::string& name);

/// Host tensor filled with `value`.
tensor filled(const shape_t& shape, float value);

}  // namespace petra

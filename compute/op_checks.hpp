// Preconditions every backend checks the same way, so that a bad call reads the same on the CPU
// and on a GPU: a failure throws std::invalid_argument naming the op, the shapes and the fix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/backend.hpp"

namespace petra {

/// x (N,C,H,W) against w (K,C,R,S): ranks, non-empty extents, matching channels, stride ≥ 1,
/// padding ≥ 0.
void check_conv2d_shapes(const char* op, const shape_t& x_shape, const shape_t& w_shape, conv2d_params p);

/// x (N,I), dy (N,O) and dw (O,I) agree (ranks and devices are the backend's to check).
void check_linear_weight_grad_shapes(const char* op, const tensor& x, const tensor& dy, const tensor& dw);

/// logits (N,K) with N ≥ 1, K ≥ 1, one label per row, each in [0, K).
void check_cross_entropy_labels(const char* op, const tensor& logits, const std::vector<int32_t>& labels);

}  // namespace petra

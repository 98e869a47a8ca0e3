// Preconditions of the backend ops, checked once for every backend by the public ops of
// `backend` (op_checks.cpp), so that a bad call reads the same on the CPU, a sim device and a GPU:
// a failure throws std::invalid_argument naming the op, the tensor, its shape and the fix.
#pragma once

#include <string>

#include "compute/backend.hpp"

namespace petra {

/// Throws std::invalid_argument "<op>: <what>"; also for the checks only a device can make.
[[noreturn]] void fail_op(const char* op, const std::string& what);

/// Throws unless `a` and `b` have the same shape.
void require_same_shape(const char* op, const char* name_a, const tensor& a, const char* name_b,
                        const tensor& b);

/// The output (N, K, P, Q) of a convolution of x (N, C, H, W) by w (K, C, R, S), shapes the public
/// op has checked: P = (H + 2p − R)/s + 1.
shape_t conv2d_output_shape(const shape_t& x_shape, const shape_t& w_shape, conv2d_params p);

}  // namespace petra

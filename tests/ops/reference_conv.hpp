// A direct-loop convolution accumulated in double: the reference the oneDNN
// convolutions are checked against (tests only; obviously correct, not fast).
#pragma once

#include <vector>

#include "compute/backend.hpp"

namespace petra::test {

/// y = x ⋆ w + b (b may be undefined), (N, K, P, Q) flattened.
std::vector<double> reference_conv2d_forward(const tensor& x, const tensor& w, const tensor& b,
                                             conv2d_params p);
/// dx = dy ⋆ᵀ w, x_shape flattened.
std::vector<double> reference_conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                                   conv2d_params p);
/// dw = x ⋆ dy (K, C, R, S) flattened, for a kernel of r × s.
std::vector<double> reference_conv2d_backward_filter(const tensor& x, const tensor& dy, int64_t r, int64_t s,
                                                     conv2d_params p);
/// db = Σ_{n,p,q} dy, (K).
std::vector<double> reference_conv2d_backward_bias(const tensor& dy);

}  // namespace petra::test

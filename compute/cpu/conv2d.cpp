// conv2d forward/backward on the CPU: shape checks, then the oneDNN engine.
#include "compute/cpu/checks.hpp"
#include "compute/cpu/conv2d_engine.hpp"
#include "compute/cpu/cpu_backend.hpp"
#include "compute/op_checks.hpp"

namespace petra {

namespace {

using cpu::fail;

/// Checks x_shape (N,C,H,W) against w_shape (K,C,R,S) and the params; the geometry.
conv2d_geometry geometry_of(const char* op, const shape_t& x_shape, const shape_t& w_shape, conv2d_params p,
                            bool bias) {
  check_conv2d_shapes(op, x_shape, w_shape, p);
  conv2d_geometry g;
  g.n = x_shape[0], g.c = x_shape[1], g.h = x_shape[2], g.w = x_shape[3];
  g.k = w_shape[0], g.r = w_shape[2], g.s = w_shape[3];
  g.stride = p.stride, g.padding = p.padding, g.bias = bias;
  if (g.h + 2 * g.padding < g.r || g.w + 2 * g.padding < g.s)
    fail(op, "x " + to_string(x_shape) + " padded by " + std::to_string(p.padding) +
                 " is smaller than the kernel of w " + to_string(w_shape) +
                 ": use more padding or a smaller kernel");
  return g;
}

void require_output_shape(const char* op, const tensor& dy, const conv2d_geometry& g) {
  const shape_t expected{g.n, g.k, g.p(), g.q()};
  if (dy.shape() != expected)
    fail(op, "dy " + dy.shape_str() + " does not match the convolution's output " + to_string(expected) +
                 " for " + g.str());
}

}  // namespace

tensor cpu_backend::conv2d_forward(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) {
  const char* op = "conv2d_forward";
  cpu::require_host(op, "x", x, 4, "(N, C, H, W)");
  cpu::require_host(op, "w", w, 4, "(K, C, R, S)");
  const conv2d_geometry g = geometry_of(op, x.shape(), w.shape(), p, b.defined());
  if (b.defined()) cpu::require_vector(op, "b", b, g.k, "w's output channels (K)");
  tensor y = output({g.n, g.k, g.p(), g.q()});
  conv_->forward(g, x.data(), w.data(), b.defined() ? b.data() : nullptr, y.data());
  return y;
}

tensor cpu_backend::conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                         conv2d_params p) {
  const char* op = "conv2d_backward_data";
  cpu::require_host(op, "dy", dy, 4, "(N, K, P, Q)");
  cpu::require_host(op, "w", w, 4, "(K, C, R, S)");
  const conv2d_geometry g = geometry_of(op, x_shape, w.shape(), p, false);
  require_output_shape(op, dy, g);
  tensor dx = output(x_shape);
  conv_->backward_data(g, dy.data(), w.data(), dx.data());
  return dx;
}

void cpu_backend::conv2d_backward_filter(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                         tensor& db) {
  const char* op = "conv2d_backward_filter";
  cpu::require_host(op, "x", x, 4, "(N, C, H, W)");
  cpu::require_host(op, "dy", dy, 4, "(N, K, P, Q)");
  cpu::require_host(op, "dw", dw, 4, "(K, C, R, S)");
  const conv2d_geometry g = geometry_of(op, x.shape(), dw.shape(), p, db.defined());
  require_output_shape(op, dy, g);
  if (db.defined()) cpu::require_vector(op, "db", db, g.k, "dw's output channels (K)");
  conv_->backward_filter(g, x.data(), dy.data(), dw.data(), db.defined() ? db.data() : nullptr);
}

}  // namespace petra

// conv2d forward/backward on the CPU by the oneDNN engine (the shapes are checked by backend). In
// bf16 the engine's reorders round the operands; in bf16_emulated they are rounded here first.
#include "compute/cpu/conv2d_engine.hpp"
#include "compute/cpu/cpu_backend.hpp"

namespace petra {

namespace {

/// The geometry of x (N,C,H,W) convolved by w (K,C,R,S).
conv2d_geometry geometry_of(const shape_t& x_shape, const shape_t& w_shape, conv2d_params p, bool bias) {
  conv2d_geometry g;
  g.n = x_shape[0], g.c = x_shape[1], g.h = x_shape[2], g.w = x_shape[3];
  g.k = w_shape[0], g.r = w_shape[2], g.s = w_shape[3];
  g.stride = p.stride, g.padding = p.padding, g.bias = bias;
  return g;
}

}  // namespace

tensor cpu_backend::conv2d_forward_impl(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) {
  const conv2d_geometry g = geometry_of(x.shape(), w.shape(), p, b.defined());
  forget_staged_dy();
  tensor y = output({g.n, g.k, g.p(), g.q()});
  const tensor x_in = conv_operand(x), w_in = conv_operand(w);
  conv_->forward(g, x_in.data(), w_in, b.defined() ? b.data() : nullptr, y.data());
  return y;
}

tensor cpu_backend::conv2d_backward_data_impl(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                              conv2d_params p) {
  const conv2d_geometry g = geometry_of(x_shape, w.shape(), p, false);
  tensor dx = output(x_shape);
  // An emulated dy is a fresh copy: the engine's staged dy (another buffer, held) is not reused.
  const tensor dy_in = conv_operand(dy), w_in = conv_operand(w);
  conv_->backward_data(g, dy_in.data(), w_in, dx.data());
  staged_dy_ = {};
  return dx;
}

void cpu_backend::conv2d_backward_filter_impl(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                              tensor& db) {
  const conv2d_geometry g = geometry_of(x.shape(), dw.shape(), p, db.defined());
  const tensor x_in = conv_operand(x), dy_in = conv_operand(dy);
  conv_->backward_filter(g, x_in.data(), dy_in.data(), dw.data(), db.defined() ? db.data() : nullptr);
  staged_dy_ = dy_in;  // held, so its block is not handed out again while the engine keeps its copy
}

void cpu_backend::forget_staged_dy() {
  conv_->forget_staged_dy();
  staged_dy_ = {};
}

}  // namespace petra

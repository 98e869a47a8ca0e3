// The backend's public ops (memory, hand-over, convolution): each checks its arguments once, for
// every backend, and calls the backend's *_impl. Messages say what was wrong and what to do.
#include "compute/op_checks.hpp"

#include <stdexcept>

#include "compute/gaussian.hpp"

namespace petra {

void fail_op(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

namespace {

/// x (N,C,H,W) against w (K,C,R,S): non-empty extents, matching channels, stride ≥ 1, padding ≥ 0,
/// a kernel no larger than the padded input.
void check_conv2d_shapes(const char* op, const shape_t& x_shape, const shape_t& w_shape, conv2d_params p) {
  if (x_shape.size() != 4) fail_op(op, "x " + to_string(x_shape) + " must be (N, C, H, W)");
  if (w_shape.size() != 4) fail_op(op, "w " + to_string(w_shape) + " must be (K, C, R, S)");
  for (int64_t d : x_shape)
    if (d < 1)
      fail_op(op, "x " + to_string(x_shape) + " has an empty extent: every dimension must be at least 1");
  for (int64_t d : w_shape)
    if (d < 1)
      fail_op(op, "w " + to_string(w_shape) + " has an empty extent: every dimension must be at least 1");
  if (x_shape[1] != w_shape[1])
    fail_op(op, "x " + to_string(x_shape) + " has " + std::to_string(x_shape[1]) + " channels but w " +
                    to_string(w_shape) + " expects " + std::to_string(w_shape[1]));
  if (p.stride < 1) fail_op(op, "stride " + std::to_string(p.stride) + " must be at least 1");
  if (p.padding < 0) fail_op(op, "padding " + std::to_string(p.padding) + " must not be negative");
  if (x_shape[2] + 2 * p.padding < w_shape[2] || x_shape[3] + 2 * p.padding < w_shape[3])
    fail_op(op, "x " + to_string(x_shape) + " padded by " + std::to_string(p.padding) +
                    " is smaller than the kernel of w " + to_string(w_shape) +
                    ": use more padding or a smaller kernel");
}

}  // namespace

void require_same_shape(const char* op, const char* name_a, const tensor& a, const char* name_b,
                        const tensor& b) {
  if (a.shape() != b.shape())
    fail_op(op, std::string(name_a) + " " + a.shape_str() + " and " + name_b + " " + b.shape_str() +
                    " must have the same shape");
}

shape_t conv2d_output_shape(const shape_t& x_shape, const shape_t& w_shape, conv2d_params p) {
  return {x_shape[0], w_shape[0], (x_shape[2] + 2 * p.padding - w_shape[2]) / p.stride + 1,
          (x_shape[3] + 2 * p.padding - w_shape[3]) / p.stride + 1};
}

// --- the shared checks ------------------------------------------------------------------------

void backend::require(const char* op, const char* name, const tensor& t) const {
  if (!t.defined()) fail_op(op, std::string(name) + " is undefined: pass a tensor on " + where().str());
  if (t.where() != where())
    fail_op(op, std::string(name) + " " + t.shape_str() + " lives on " + t.where().str() + ", not on " +
                    where().str() +
                    ": the hand-over is missing (export_for on the backend that made it, then import here)");
  check_usable(op, name, t);
}

void backend::require(const char* op, const char* name, const tensor& t, std::size_t rank,
                      const char* layout) const {
  if (!t.defined()) fail_op(op, std::string(name) + " is undefined: pass a tensor " + layout);
  require(op, name, t);
  if (t.rank() != rank)
    fail_op(op, std::string(name) + " " + t.shape_str() + " has rank " + std::to_string(t.rank()) +
                    ", expected " + layout);
}

void backend::require_vector(const char* op, const char* name, const tensor& t, int64_t channels,
                             const char* of) const {
  require(op, name, t, 1, "(C)");
  if (t.dim(0) != channels)
    fail_op(op, std::string(name) + " " + t.shape_str() + " has " + std::to_string(t.dim(0)) +
                    " entries but " + of + " has " + std::to_string(channels));
}

void backend::check_usable(const char*, const char*, const tensor&) const {}

// --- memory and hand-over ---------------------------------------------------------------------

tensor backend::empty(const shape_t& shape) { return empty_impl(shape); }

tensor backend::zeros(const shape_t& shape) { return zeros_impl(shape); }

tensor backend::from_host(const tensor& host) {
  if (!host.defined()) fail_op("from_host", "the tensor is undefined: nothing to copy");
  if (host.where().type != device_type::cpu)
    fail_op("from_host", "the tensor " + host.shape_str() + " lives on " + host.where().str() +
                             ", not on the host: hand it over with export_for on its maker and import here");
  return from_host_impl(host);
}

tensor backend::to_host(const tensor& t) {
  require("to_host", "t", t);
  return to_host_impl(t);
}

void backend::copy(const tensor& src, tensor& dst) {
  require("copy", "src", src);
  require("copy", "dst", dst);
  require_same_shape("copy", "src", src, "dst", dst);
  copy_impl(src, dst);
}

void backend::fill_zero(tensor& t) {
  require("fill_zero", "t", t);
  fill_zero_impl(t);
}

tensor backend::gaussian(const shape_t& shape, uint64_t key) {
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0)
      fail_op("gaussian", "dimension " + std::to_string(i) + " of the shape is " + std::to_string(shape[i]) +
                              ": sizes must not be negative");
  return gaussian_impl(shape, key);
}

tensor backend::gaussian_impl(const shape_t& shape, uint64_t key) {
  tensor host = tensor::empty(shape);
  fill_gaussian(host.data(), host.numel(), key);
  return from_host(host);
}

void backend::synchronize() { synchronize_impl(); }

tensor backend::export_for(const tensor& t, const device& consumer) {
  if (!t.defined()) return t;
  if (t.where() != where())
    fail_op("export_for", "the tensor " + t.shape_str() + " for " + consumer.str() + " lives on " +
                              t.where().str() + ", not on " + where().str() +
                              ": only the backend that made it (or imported it) can export it");
  check_usable("export_for", "t", t);
  return export_for_impl(t, consumer);
}

tensor backend::import(const tensor& t) {
  // Any device may arrive here: what each backend accepts, and how, is its own.
  if (!t.defined()) return t;
  return import_impl(t);
}

// --- convolution ------------------------------------------------------------------------------

tensor backend::conv2d_forward(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) {
  const char* op = "conv2d_forward";
  require(op, "x", x, 4, "(N, C, H, W)");
  require(op, "w", w, 4, "(K, C, R, S)");
  check_conv2d_shapes(op, x.shape(), w.shape(), p);
  if (b.defined()) require_vector(op, "b", b, w.dim(0), "w's output channels (K)");
  return conv2d_forward_impl(x, w, b, p);
}

namespace {

void require_conv_output(const char* op, const tensor& dy, const shape_t& x_shape, const shape_t& w_shape,
                         conv2d_params p) {
  const shape_t expected = conv2d_output_shape(x_shape, w_shape, p);
  if (dy.shape() != expected)
    fail_op(op, "dy " + dy.shape_str() + " does not match the convolution's output " + to_string(expected) +
                    " for x " + to_string(x_shape) + ", w " + to_string(w_shape) + ", stride " +
                    std::to_string(p.stride) + ", padding " + std::to_string(p.padding));
}

}  // namespace

tensor backend::conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                     conv2d_params p) {
  const char* op = "conv2d_backward_data";
  require(op, "dy", dy, 4, "(N, K, P, Q)");
  require(op, "w", w, 4, "(K, C, R, S)");
  check_conv2d_shapes(op, x_shape, w.shape(), p);
  require_conv_output(op, dy, x_shape, w.shape(), p);
  return conv2d_backward_data_impl(dy, w, x_shape, p);
}

void backend::conv2d_backward_filter(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                     tensor& db) {
  const char* op = "conv2d_backward_filter";
  require(op, "x", x, 4, "(N, C, H, W)");
  require(op, "dy", dy, 4, "(N, K, P, Q)");
  require(op, "dw", dw, 4, "(K, C, R, S)");
  check_conv2d_shapes(op, x.shape(), dw.shape(), p);
  require_conv_output(op, dy, x.shape(), dw.shape(), p);
  if (db.defined()) require_vector(op, "db", db, dw.dim(0), "dw's output channels (K)");
  conv2d_backward_filter_impl(x, dy, p, dw, db);
}

}  // namespace petra

// Preconditions shared by the backends.
#include "compute/op_checks.hpp"

#include <stdexcept>

namespace petra {
namespace {

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

}  // namespace

void check_conv2d_shapes(const char* op, const shape_t& x_shape, const shape_t& w_shape, conv2d_params p) {
  if (x_shape.size() != 4) fail(op, "x " + to_string(x_shape) + " must be (N, C, H, W)");
  if (w_shape.size() != 4) fail(op, "w " + to_string(w_shape) + " must be (K, C, R, S)");
  for (int64_t d : x_shape)
    if (d < 1)
      fail(op, "x " + to_string(x_shape) + " has an empty extent: every dimension must be at least 1");
  for (int64_t d : w_shape)
    if (d < 1)
      fail(op, "w " + to_string(w_shape) + " has an empty extent: every dimension must be at least 1");
  if (x_shape[1] != w_shape[1])
    fail(op, "x " + to_string(x_shape) + " has " + std::to_string(x_shape[1]) + " channels but w " +
                 to_string(w_shape) + " expects " + std::to_string(w_shape[1]));
  if (p.stride < 1) fail(op, "stride " + std::to_string(p.stride) + " must be at least 1");
  if (p.padding < 0) fail(op, "padding " + std::to_string(p.padding) + " must not be negative");
}

void check_linear_weight_grad_shapes(const char* op, const tensor& x, const tensor& dy, const tensor& dw) {
  const int64_t n = x.dim(0), in = x.dim(1), out = dy.dim(1);
  if (dy.dim(0) != n)
    fail(op, "x " + x.shape_str() + " and dy " + dy.shape_str() + " have different batch sizes");
  if (dw.shape() != shape_t{out, in})
    fail(op, "dw " + dw.shape_str() + " must be (O, I) = " + to_string({out, in}) + " for x " +
                 x.shape_str() + " and dy " + dy.shape_str());
}

void check_cross_entropy_labels(const char* op, const tensor& logits, const std::vector<int32_t>& labels) {
  const int64_t n = logits.dim(0), classes = logits.dim(1);
  if (n < 1 || classes < 1)
    fail(op, "logits " + logits.shape_str() + " is empty: need N ≥ 1 rows of K ≥ 1 classes");
  if (static_cast<int64_t>(labels.size()) != n)
    fail(op,
         std::to_string(labels.size()) + " labels for logits " + logits.shape_str() + ": need one per row");
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      fail(op, "labels[" + std::to_string(i) + "] = " + std::to_string(labels[i]) + " is outside [0, " +
                   std::to_string(classes) + "): logits " + logits.shape_str() + " have " +
                   std::to_string(classes) + " classes");
}

}  // namespace petra

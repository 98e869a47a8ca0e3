// Trainable parameters and the activations that flow between blocks and stages.
#pragma once

#include <string>
#include <vector>

#include "compute/tensor.hpp"

namespace petra {

/// One trainable tensor with its accumulated gradient and its optimizer state.
struct parameter {
  std::string name;  // e.g. "g2.b0.f.conv1.weight"
  tensor value;
  tensor grad;           // Σ of the micro-batch gradients since the last optimizer step
  tensor momentum;       // SGD's momentum buffer, or AdamW's first moment m
  tensor second_moment;  // AdamW's second moment v (undefined under SGD)
  bool decay = true;     // weight decay applies (conv and linear weights only)
};

/// A running statistic (BN running mean/var): saved in checkpoints, not trained.
struct buffer_ref {
  std::string name;
  tensor* value;
};

/// What flows between blocks: an image or logits (x1 only) or the two streams (x1, x2).
struct activation {
  tensor x1;
  tensor x2;

  bool two_streams() const { return x2.defined(); }
  bool defined() const { return x1.defined(); }
  std::size_t bytes() const { return x1.bytes() + (x2.defined() ? x2.bytes() : 0); }
  int64_t batch() const { return x1.defined() ? x1.dim(0) : 0; }
};

/// The shape of an activation (x2 empty for one stream).
struct activation_shape {
  shape_t x1;
  shape_t x2;

  int64_t numel() const { return numel_of(x1) + (x2.empty() ? 0 : numel_of(x2)); }
  std::string str() const { return x2.empty() ? to_string(x1) : to_string(x1) + " + " + to_string(x2); }
};

/// How batch norm behaves in a pass.
enum class pass {
  train,      // batch statistics; running statistics updated (the one training forward)
  recompute,  // batch statistics; running statistics untouched (inverse, recompute)
  eval,       // running statistics
  calibrate,  // batch statistics; running statistics = the mean over this run of calibrate passes
};

}  // namespace petra

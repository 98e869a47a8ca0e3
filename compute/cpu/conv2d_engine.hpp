// oneDNN convolutions over plain NCHW/OIHW buffers. Primitives are cached per shape
// and run in oneDNN's blocked layouts behind reorders: 2-4x faster end to end here
// than oneDNN's plain-NCHW (gemm) kernels. With bf16 operands those reorders also round.
// In fp32 the 3×3 stride-1 convolutions of 32 channels or more run as Winograd: oneDNN's where it
// has a kernel for them (AVX-512), elsewhere petra's own from 64 channels (winograd.hpp).
// Converted weights are kept between calls until their buffer is written (weight_cache.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "compute/tensor.hpp"

namespace petra {

namespace cpu {
class winograd_conv;
}

/// One convolution's shape: x (n,c,h,w), w (k,c,r,s), stride, padding, bias or not.
struct conv2d_geometry {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t k = 0, r = 0, s = 0;
  int64_t stride = 1, padding = 0;
  bool bias = false;

  int64_t p() const { return (h + 2 * padding - r) / stride + 1; }
  int64_t q() const { return (w + 2 * padding - s) / stride + 1; }
  std::string str() const;
  bool operator<(const conv2d_geometry& other) const;
};

/// Whether an fp32 engine runs `g` as Winograd F(4×4, 3×3): 3×3, stride 1, and both widths whole
/// blocks of 16 channels, at least 32. At 16 channels the direct kernels are faster (1.2–2.3× on
/// the default preset's 16-channel convolutions, `bench_conv_kernels`): a tile's input and output
/// transforms are per channel, the multiplications they save per channel pair.
bool winograd_pays(const conv2d_geometry& g);

/// Owns the oneDNN engine, stream, cached primitives and the workspace that holds
/// operands in oneDNN's layouts. Not thread-safe: one caller at a time. The callers' buffers are
/// fp32; with `bf16_operands` the primitives read bf16 copies of the inputs (x, w, dy, rounded to
/// nearest even by the reorders) and write fp32 results (y, dx, dw, db) from fp32 accumulators.
/// With `winograd` (fp32 operands only) the convolutions where it pays (winograd_pays) use oneDNN's
/// Winograd kernels where it has them for the geometry, else petra's (cpu::winograd_conv) where
/// that pays (cpu::winograd_conv::pays); every other convolution is direct. With
/// `keep_converted_weights` a weight tensor's copy in a primitive's layout is made once per write of
/// its buffer and reused until the next (the same reorder of the same bytes: the same results).
class conv2d_engine {
 public:
  conv2d_engine(int threads, bool bf16_operands, bool winograd, bool keep_converted_weights = true);
  ~conv2d_engine();
  conv2d_engine(const conv2d_engine&) = delete;
  conv2d_engine& operator=(const conv2d_engine&) = delete;

  /// y (n,k,p,q) = x ⋆ w + b (b is read only when g.bias).
  void forward(const conv2d_geometry& g, const float* x, const tensor& w, const float* b, float* y);
  /// dx (n,c,h,w) = dy ⋆ᵀ w.
  void backward_data(const conv2d_geometry& g, const float* dy, const tensor& w, float* dx);
  /// dw += x ⋆ dy; db += Σ dy when g.bias. Leaves dy in oneDNN's layout for a
  /// backward_data of the same geometry and the same dy buffer that follows it.
  void backward_filter(const conv2d_geometry& g, const float* x, const float* dy, float* dw, float* db);
  /// Drops the staged dy: its buffer may be written or reused from now on.
  void forget_staged_dy() { staged_dy_ = nullptr; }

  /// The name of the forward kernel that runs `g`: oneDNN's (e.g. "jit_wino_4x3:avx512_core" or
  /// "jit:avx2"), or "petra_wino_4x3" for petra's own Winograd; builds the geometry's primitives when
  /// they are not cached yet.
  std::string forward_kernel(const conv2d_geometry& g);

  /// Weight conversions run and converted copies reused since construction (0 and 0 when weights
  /// are not kept, or need no conversion in the primitives' layouts).
  int64_t weight_conversions() const;
  int64_t weight_reuses() const;

 private:
  struct operand;
  struct primitives;
  struct primitives_builder;
  primitives& lookup(const conv2d_geometry& g);
  void bind(operand& o, const void* user_data);
  /// Binds `o` to `w` as the primitive reads it: the caller's buffer, or its converted copy.
  void weights_in(operand& o, const tensor& w);
  void stage_in(operand& o);
  void stage_out(operand& o);

  int threads_;
  bool bf16_operands_;
  bool winograd_;
  bool keep_converted_weights_;
  struct dnnl_state;
  std::unique_ptr<dnnl_state> dnnl_;  // engine, stream, weight cache (keeps dnnl.hpp out of this header)
  std::unique_ptr<cpu::winograd_conv> own_winograd_;  // where oneDNN has no Winograd kernel
  std::map<conv2d_geometry, std::unique_ptr<primitives>> cache_;
  tensor workspace_[3];  // operands in oneDNN layouts: 0 x/dx, 1 w/dw, 2 y/dy
  tensor scratchpad_;    // every primitive's and reorder's scratchpad (one runs at a time)
  // The dy whose reordered copy workspace_[2] holds after a backward_filter, and the
  // operand that made it: the backward_data that follows in a layer's backward skips that reorder.
  const float* staged_dy_ = nullptr;
  const operand* staged_as_ = nullptr;
};

}  // namespace petra

// Winograd convolutions of petra's own for 3×3 stride-1 layers in fp32, used where oneDNN has no
// Winograd kernel (oneDNN 2.6 has them for AVX-512 only; on an AVX2 CPU every convolution would
// run direct). F(4×4, 3×3): the output is cut into tiles of 4×4, each tile's 6×6 input patch and
// each 3×3 filter are transformed, and the 36 transformed points are 36 matrix products over the
// channels, 4× fewer multiplications than direct. The backward data pass is the same algorithm on
// dy with the flipped, transposed filters; the backward filter pass is F(3×3, 4×4) with the same
// 6×6 input patches and the 4×4 tiles of dy as filters.
//
// The matrices come from Toom-Cook at the points 0, ±1, ±2 and ∞ (computed in double at compile
// time, then rounded to fp32 constants that the unrolled transforms fold). Every product is a
// single-threaded SGEMM over a fixed batch of tiles, the batches and the transforms spread over
// the threads in fixed pieces, so the bits do not depend on the thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "compute/cpu/conv2d_engine.hpp"
#include "compute/cpu/winograd_matrices.hpp"

namespace petra::cpu {

/// Runs the 3×3 stride-1 fp32 convolutions of its geometries (handles()) on `threads` threads of
/// the caller. Buffers are the callers' NCHW / OIHW. Not thread-safe: it keeps scratch buffers.
class winograd_conv {
 public:
  /// 3×3, stride 1, padding at most 2, widths in whole blocks of 16 channels.
  static bool handles(const conv2d_geometry& g);
  /// Where it is faster than oneDNN's direct kernels (bench_conv_kernels on a 2-core AVX2 EPYC):
  /// what it handles, from 64 channels in and out. Its transforms cost per channel and the products
  /// per pair of channels, so at 32 channels (64 × 32 × 14×14) the direct kernels were as fast or
  /// faster, and from 64 (64 × 64 × 7×7, RevNet-18's 64–512) it was 1.2–2× faster.
  static bool pays(const conv2d_geometry& g);

  /// y = x ⋆ w + b (b read only when g.bias).
  void forward(const conv2d_geometry& g, const float* x, const float* w, const float* b, float* y,
               int threads);
  /// dx = dy ⋆ᵀ w.
  void backward_data(const conv2d_geometry& g, const float* dy, const float* w, float* dx, int threads);
  /// dw += x ⋆ dy; db += Σ dy when g.bias.
  void backward_filter(const conv2d_geometry& g, const float* x, const float* dy, float* dw, float* db,
                       int threads);

 private:
  /// A grown-only buffer of floats (no zeroing: every use writes before it reads).
  struct scratch {
    std::vector<float> values;
    float* reserve(int64_t count);
  };

  /// out (n, cout, h + 2·pad − 2, w + 2·pad − 2) = in (n, cin, h, w) ⋆ the filters whose transforms
  /// `u` holds (36 panels of cin × cout), + bias (cout values, or null). False when oneDNN refused an
  /// SGEMM.
  bool correlate(const float* in, int64_t n, int64_t cin, int64_t h, int64_t w, int64_t pad, const float* u,
                 int64_t cout, const float* bias, float* out, int threads);

  scratch padded_, padded_dy_, filters_, data_, products_, staged_, dy_points_, sums_;
};

}  // namespace petra::cpu

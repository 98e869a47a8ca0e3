// runtime.precision as the backends see it: how convolutions and GEMMs round their operands.
#pragma once

#include <cstdint>
#include <cstring>

namespace petra {

/// How the convolutions and GEMMs (conv2d_* and linear_*) treat their operands. Tensors stay fp32
/// in memory; every other op, every sum (the products' accumulation included), every result, the
/// master weights, the optimizer state and the batch-norm statistics stay fp32.
enum class math_precision {
  fp32,           // fp32 operands and arithmetic
  tf32,           // CUDA: TF32 tensor-core math; a CPU or sim backend computes in fp32
  bf16,           // operands rounded to bf16 (8 significant bits), products summed in fp32
  bf16_emulated,  // bf16's rounding of the operands, then fp32 kernels (no bf16 instructions needed)
};

/// The name runtime.precision gives `p`.
inline const char* to_string(math_precision p) {
  switch (p) {
    case math_precision::fp32:
      return "fp32";
    case math_precision::tf32:
      return "tf32";
    case math_precision::bf16:
      return "bf16";
    case math_precision::bf16_emulated:
      return "bf16_emulated";
  }
  return "fp32";
}

/// bf16 or bf16_emulated: the convolutions' and GEMMs' operands are rounded to bf16.
inline bool rounds_to_bf16(math_precision p) {
  return p == math_precision::bf16 || p == math_precision::bf16_emulated;
}

/// bf16 keeps 8 significant bits: rounding to nearest errs by at most u = 2^-8 relative.
constexpr double bf16_unit_roundoff = 1.0 / 256;

/// The bf16 nearest to `v` (ties to even), as an fp32 (its upper 16 bits). A NaN stays a NaN (one
/// kept bit of its payload is set); ±∞ stay; beyond the largest bf16 lies ∞.
inline float round_to_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) {
    if (bits & 0x007fffffu) bits |= 0x00400000u;
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);  // carries into the exponent where it must (up to ∞)
  }
  bits &= 0xffff0000u;
  float rounded;
  std::memcpy(&rounded, &bits, sizeof rounded);
  return rounded;
}

}  // namespace petra

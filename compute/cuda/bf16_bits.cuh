// The bf16 rounding of compute/precision.hpp's round_to_bf16 for the kernels, bit for bit: the
// GPU's bf16 operands are the CPU's.
#pragma once

namespace petra::cuda::kernels {

/// The bits of the bf16 nearest to `v` (ties to even), in the upper half of an fp32's bits. A NaN
/// stays a NaN (one kept payload bit set); ±∞ stay; beyond the largest bf16 lies ∞.
__device__ inline unsigned bf16_bits_of(float v) {
  unsigned bits = __float_as_uint(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) {
    if (bits & 0x007fffffu) bits |= 0x00400000u;
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);
  }
  return bits & 0xffff0000u;
}

}  // namespace petra::cuda::kernels

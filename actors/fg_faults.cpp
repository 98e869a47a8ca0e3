// Faults under forward gradients.
#include "actors/fg_faults.hpp"

namespace petra::detail {

double derivatives_draw(uint64_t seed, int32_t stage, int64_t id, uint64_t salt) {
  // splitmix64's finaliser over the three keys: independent draws per stage, micro-batch and fault.
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + (static_cast<uint64_t>(stage) << 40) +
               static_cast<uint64_t>(id) * 0xD1B54A32D192ED03ULL + salt * 0x8CB92BA72F3D8DD7ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

bool returns_credits(const stage_core& c) {
  if (!c.ctx.fg) return c.is_first();
  return c.ctx.fg->local_target() ? c.is_last() : c.is_first();
}

}  // namespace petra::detail

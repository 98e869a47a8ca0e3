// Seeded parameter initialisation.
#include "compute/init.hpp"

#include <cmath>

namespace petra {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

init_rng::init_rng(uint64_t seed, const std::string& name)
    : state_(seed * 0x9E3779B97F4A7C15ULL ^ fnv1a(name)) {}

float init_rng::uniform(float lo, float hi) {
  const double u = static_cast<double>(splitmix64(state_) >> 11) * (1.0 / 9007199254740992.0);  // [0,1)
  return static_cast<float>(lo + (hi - lo) * u);
}

tensor uniform_fan_in(const shape_t& shape, int64_t fan_in, uint64_t seed, const std::string& name) {
  tensor t = tensor::empty(shape);
  const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  init_rng rng(seed, name);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = rng.uniform(-bound, bound);
  return t;
}

tensor truncated_normal(const shape_t& shape, float std, uint64_t seed, const std::string& name) {
  constexpr double two_pi = 6.28318530717958647692;
  tensor t = tensor::empty(shape);
  init_rng rng(seed, name);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) {
    double z = 0;
    do {  // Box–Muller; a draw beyond ±2 (or not finite, from log 0) is drawn again
      const double u1 = 1.0 - static_cast<double>(rng.uniform(0.f, 1.f)), u2 = rng.uniform(0.f, 1.f);
      z = std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2);
    } while (!(std::abs(z) <= 2.0));
    p[i] = static_cast<float>(std * z);
  }
  return t;
}

tensor filled(const shape_t& shape, float value) {
  tensor t = tensor::empty(shape);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = value;
  return t;
}

}  // namespace petra

// Counter-based random numbers: every draw is a pure function of (seed, stream, epoch, position),
// so an epoch's order or one sample's augmentation can be rebuilt anywhere without carried state.
#pragma once

#include <cstdint>

namespace petra::data {

/// Which use a sequence serves, so that shuffling and augmenting never share draws.
enum class rng_stream : uint64_t { shuffle = 1, augment = 2 };

/// A SplitMix64 sequence started from the hash of (seed, stream, epoch, position); identical on
/// every platform, unlike the std:: distributions.
class counter_rng {
 public:
  counter_rng(uint64_t seed, rng_stream stream, int64_t epoch, int64_t position)
      : state_(absorb(absorb(absorb(seed, static_cast<uint64_t>(stream)), static_cast<uint64_t>(epoch)),
                      static_cast<uint64_t>(position))) {}

  /// The next 64 random bits: state ← state + γ, output mix64(state).
  uint64_t next() { return mix64(state_ += golden_gamma); }

  /// Uniform in [0, n) for n ≥ 1, by the high half of next()·n (bias below n / 2^64).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  static constexpr uint64_t golden_gamma = 0x9E3779B97F4A7C15ull;  // 2^64 / φ, SplitMix64's increment

  /// SplitMix64's finaliser: a bijective avalanche mix of 64 bits.
  static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Folds one more key word into a hash: h ← mix64(mix64(h) + v·γ), so (h, v) ≠ (h, v') never collide.
  static uint64_t absorb(uint64_t hash, uint64_t value) { return mix64(mix64(hash) + value * golden_gamma); }

  uint64_t state_;
};

}  // namespace petra::data

// The seeded, stateless per-epoch order in which a dataset is visited.
#pragma once

#include <cstdint>
#include <vector>

namespace petra::data {

/// A seeded permutation of [0, n) for one epoch (Fisher–Yates over counter_rng(seed, shuffle, epoch));
/// the same (n, seed, epoch) always gives the same order, on every platform.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int epoch);

}  // namespace petra::data

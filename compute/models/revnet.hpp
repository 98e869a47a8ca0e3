// RevNet models as docs/design.md §2 specifies: presets and the block list they build.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/blocks/block.hpp"

namespace petra {

struct revnet_spec {
  std::string name;
  bool imagenet_stem = false;  // conv7×7 s2 + max-pool, else conv3×3 s1
  bool bottleneck = false;     // bottleneck F (RevNet-50), else basic
  int in_channels = 3, height = 32, width = 32;
  int num_classes = 10;
  int stem_width = 64;      // stream width after the stem
  std::vector<int> widths;  // stream width per group
  std::vector<int> hidden;  // bottleneck hidden width per group
  std::vector<int> blocks;  // blocks per group

  /// Throws std::invalid_argument naming the field when the spec cannot build a network.
  void validate() const;
};

/// revnet18, revnet34, revnet50 (3×32×32, 10 classes), fashion_small (1×28×28,
/// widths 16, 32, 64, blocks 2, 2, 2) and tiny (1×8×8, widths 4, 8, blocks 2, 1).
revnet_spec revnet_preset(const std::string& arch);

/// The blocks in order: stem, one per residual block, head. In group g the first block
/// downsamples when g > 0 (stride 2) or when its width differs from the incoming one;
/// bottleneck nets start every group with a downsampling block.
std::vector<std::unique_ptr<block>> build_revnet(const revnet_spec& spec, backend& be, uint64_t seed);

/// The same, block i built on `backend_of(i)` (its stage's device context). Initial values depend
/// only on (seed, parameter name), so any placement gives the same network.
std::vector<std::unique_ptr<block>> build_revnet(const revnet_spec& spec,
                                                 const std::function<backend&(std::size_t)>& backend_of,
                                                 uint64_t seed);

/// The input shape of one micro-batch of `batch` images.
activation_shape input_shape(const revnet_spec& spec, int64_t batch);

}  // namespace petra

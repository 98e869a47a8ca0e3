// Reversible vision transformers (RevViT, Mangalam et al. 2022): the spec and the block list it
// builds: patch stem, `depth` reversible transformer blocks, token head.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/blocks/block.hpp"

namespace petra {

struct revvit_spec {
  std::string name = "revvit";
  int in_channels = 3, height = 32, width = 32;  // the images
  int num_classes = 10;
  int depth = 12;          // reversible transformer blocks
  int embed_dim = 384;     // d: each stream's features per token
  int heads = 6;           // d divisible by heads
  int patch = 4;           // p×p patches: height and width divisible by p
  double mlp_ratio = 4.0;  // the MLP's hidden width is round(mlp_ratio·d)

  int hidden() const;
  int64_t tokens() const { return static_cast<int64_t>(height / patch) * (width / patch); }
  /// Throws std::invalid_argument naming the field when the spec cannot build a network.
  void validate() const;
};

/// The blocks in order: "stem" (patch embedding and position embedding), "b0" … "b{depth−1}"
/// (transformer blocks), "head"; block i built on `backend_of(i)`. Initial values depend only on
/// (seed, parameter name), so any placement gives the same network.
std::vector<std::unique_ptr<block>> build_revvit(const revvit_spec& spec,
                                                 const std::function<backend&(std::size_t)>& backend_of,
                                                 uint64_t seed);
std::vector<std::unique_ptr<block>> build_revvit(const revvit_spec& spec, backend& be, uint64_t seed);

/// The input shape of one micro-batch of `batch` images.
activation_shape input_shape(const revvit_spec& spec, int64_t batch);

}  // namespace petra

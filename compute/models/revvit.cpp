// RevViT construction.
#include "compute/models/revvit.hpp"

#include <cmath>
#include <stdexcept>

#include "compute/blocks/patch_stem.hpp"
#include "compute/blocks/token_head.hpp"
#include "compute/blocks/transformer.hpp"

namespace petra {

int revvit_spec::hidden() const { return static_cast<int>(std::lround(mlp_ratio * embed_dim)); }

void revvit_spec::validate() const {
  auto fail = [&](const std::string& what) { throw std::invalid_argument("model '" + name + "': " + what); };
  if (in_channels <= 0 || height <= 0 || width <= 0) fail("input C, H, W must be positive");
  if (num_classes <= 1) fail("num_classes must be at least 2");
  if (depth <= 0) fail("depth must be positive");
  if (embed_dim <= 0) fail("width must be positive");
  if (heads <= 0) fail("heads must be positive");
  if (embed_dim % heads)
    fail("width " + std::to_string(embed_dim) + " is not divisible by " + std::to_string(heads) + " heads");
  if (patch <= 0) fail("patch must be positive");
  if (height % patch || width % patch)
    fail("input " + std::to_string(height) + "×" + std::to_string(width) + " is not divisible into " +
         std::to_string(patch) + "×" + std::to_string(patch) + " patches");
  if (!(mlp_ratio > 0) || !std::isfinite(mlp_ratio) || hidden() < 1)
    fail("mlp_ratio " + std::to_string(mlp_ratio) + " must give a hidden width of at least 1");
}

std::vector<std::unique_ptr<block>> build_revvit(const revvit_spec& spec,
                                                 const std::function<backend&(std::size_t)>& backend_of,
                                                 uint64_t seed) {
  spec.validate();
  std::vector<std::unique_ptr<block>> blocks;
  blocks.push_back(std::make_unique<patch_stem_block>(backend_of(0), "stem", spec.in_channels, spec.height,
                                                      spec.width, spec.patch, spec.embed_dim, seed));
  for (int i = 0; i < spec.depth; ++i)
    blocks.push_back(std::make_unique<transformer_block>(backend_of(blocks.size()), "b" + std::to_string(i),
                                                         spec.embed_dim, spec.heads, spec.hidden(), seed));
  blocks.push_back(std::make_unique<token_head_block>(backend_of(blocks.size()), "head", spec.embed_dim,
                                                      spec.num_classes, seed));
  return blocks;
}

std::vector<std::unique_ptr<block>> build_revvit(const revvit_spec& spec, backend& be, uint64_t seed) {
  return build_revvit(
      spec, [&](std::size_t) -> backend& { return be; }, seed);
}

activation_shape input_shape(const revvit_spec& spec, int64_t batch) {
  return {{batch, spec.in_channels, spec.height, spec.width}, {}};
}

}  // namespace petra

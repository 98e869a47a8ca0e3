// RevNet presets and construction.
#include "compute/models/revnet.hpp"

#include <stdexcept>

#include "compute/blocks/coupling.hpp"
#include "compute/blocks/downsample.hpp"
#include "compute/blocks/head.hpp"
#include "compute/blocks/stem.hpp"

namespace petra {

void revnet_spec::validate() const {
  auto fail = [&](const std::string& what) { throw std::invalid_argument("model '" + name + "': " + what); };
  if (in_channels <= 0 || height <= 0 || width <= 0) fail("input C, H, W must be positive");
  if (num_classes <= 1) fail("num_classes must be at least 2");
  if (stem_width <= 0) fail("stem_width must be positive");
  if (widths.empty()) fail("widths is empty: give one stream width per group");
  if (blocks.size() != widths.size())
    fail("blocks has " + std::to_string(blocks.size()) + " entries but widths has " +
         std::to_string(widths.size()) + ": give one block count per group");
  if (bottleneck && hidden.size() != widths.size())
    fail("a bottleneck net needs one hidden width per group (hidden has " + std::to_string(hidden.size()) +
         ")");
  for (std::size_t g = 0; g < widths.size(); ++g) {
    if (widths[g] <= 0) fail("widths[" + std::to_string(g) + "] must be positive");
    if (blocks[g] <= 0) fail("blocks[" + std::to_string(g) + "] must be positive");
  }
  const int reduction = (imagenet_stem ? 4 : 1) << (widths.size() - 1);
  if (height % reduction || width % reduction)
    fail("input " + std::to_string(height) + "×" + std::to_string(width) + " is not divisible by " +
         std::to_string(reduction) + ", the net's total stride");
}

revnet_spec revnet_preset(const std::string& arch) {
  revnet_spec s;
  s.name = arch;
  if (arch == "revnet18" || arch == "revnet34") {
    s.widths = {64, 128, 256, 512};
    s.blocks = arch == "revnet18" ? std::vector<int>{2, 2, 2, 2} : std::vector<int>{3, 4, 6, 3};
  } else if (arch == "revnet50") {
    s.bottleneck = true;
    s.widths = {256, 512, 1024, 2048};
    s.hidden = {64, 128, 256, 512};
    s.blocks = {3, 4, 6, 3};
  } else if (arch == "fashion_small") {
    s.in_channels = 1, s.height = 28, s.width = 28;
    s.stem_width = 16;
    s.widths = {16, 32, 64};
    s.blocks = {2, 2, 2};
  } else if (arch == "tiny") {
    s.in_channels = 1, s.height = 8, s.width = 8;
    s.stem_width = 4;
    s.widths = {4, 8};
    s.blocks = {2, 1};
  } else {
    throw std::invalid_argument("unknown model '" + arch +
                                "': expected one of revnet18, revnet34, revnet50, " + "fashion_small, tiny");
  }
  return s;
}

std::vector<std::unique_ptr<block>> build_revnet(const revnet_spec& spec, backend& be, uint64_t seed) {
  return build_revnet(
      spec, [&](std::size_t) -> backend& { return be; }, seed);
}

std::vector<std::unique_ptr<block>> build_revnet(const revnet_spec& spec,
                                                 const std::function<backend&(std::size_t)>& backend_of,
                                                 uint64_t seed) {
  spec.validate();
  std::vector<std::unique_ptr<block>> blocks;
  blocks.push_back(std::make_unique<stem_block>(backend_of(0), "stem", spec.in_channels, spec.stem_width,
                                                spec.imagenet_stem, seed));
  int width = spec.stem_width;
  for (std::size_t g = 0; g < spec.widths.size(); ++g) {
    for (int b = 0; b < spec.blocks[g]; ++b) {
      const std::string name = "g" + std::to_string(g + 1) + ".b" + std::to_string(b);
      const int stride = (b == 0 && g > 0) ? 2 : 1;
      const int out = spec.widths[g];
      backend& be = backend_of(blocks.size());
      if (spec.bottleneck) {
        if (b == 0)
          blocks.push_back(std::make_unique<downsample_bottleneck_block>(be, name, width, spec.hidden[g], out,
                                                                         stride, seed));
        else
          blocks.push_back(std::make_unique<coupling_block>(
              be, name, conv_chain::bottleneck(out, spec.hidden[g], out, 1), seed));
      } else if (stride != 1 || out != width) {
        blocks.push_back(std::make_unique<downsample_basic_block>(be, name, width, out, stride, seed));
      } else {
        blocks.push_back(std::make_unique<coupling_block>(be, name, conv_chain::basic(out), seed));
      }
      width = out;
    }
  }
  blocks.push_back(
      std::make_unique<head_block>(backend_of(blocks.size()), "head", width, spec.num_classes, seed));
  return blocks;
}

activation_shape input_shape(const revnet_spec& spec, int64_t batch) {
  return {{batch, spec.in_channels, spec.height, spec.width}, {}};
}

}  // namespace petra

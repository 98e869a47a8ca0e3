// Cutting a model's block list into J pipeline stages.
#pragma once

#include <memory>
#include <vector>

#include "compute/blocks/block.hpp"

namespace petra {

/// Blocks per stage: `stage_blocks` as given (its sum must equal the block count), or one
/// block per stage when it is empty. Throws std::invalid_argument naming the mismatch.
std::vector<int> resolve_partition(const std::vector<int>& stage_blocks, std::size_t block_count);

/// Moves `blocks` into consecutive groups of the resolved sizes.
std::vector<std::vector<std::unique_ptr<block>>> partition_blocks(std::vector<std::unique_ptr<block>> blocks,
                                                                  const std::vector<int>& sizes);

}  // namespace petra

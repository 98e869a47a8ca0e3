// Cutting a model's block list into pipeline stages.
#include "compute/pipeline/partition.hpp"

#include <numeric>
#include <stdexcept>
#include <string>

namespace petra {

std::vector<int> resolve_partition(const std::vector<int>& stage_blocks, std::size_t block_count) {
  if (stage_blocks.empty()) return std::vector<int>(block_count, 1);
  for (std::size_t i = 0; i < stage_blocks.size(); ++i)
    if (stage_blocks[i] <= 0)
      throw std::invalid_argument("pipeline.stage_blocks[" + std::to_string(i) + "] = " +
                                  std::to_string(stage_blocks[i]) + ": every stage needs at least one block");
  const long total = std::accumulate(stage_blocks.begin(), stage_blocks.end(), 0L);
  if (total != static_cast<long>(block_count))
    throw std::invalid_argument("pipeline.stage_blocks sums to " + std::to_string(total) +
                                " but the model has " + std::to_string(block_count) +
                                " blocks (stem, each residual block, head): the sizes must add up to it");
  return stage_blocks;
}

std::vector<std::vector<std::unique_ptr<block>>> partition_blocks(std::vector<std::unique_ptr<block>> blocks,
                                                                  const std::vector<int>& sizes) {
  std::vector<std::vector<std::unique_ptr<block>>> stages;
  std::size_t next = 0;
  for (int n : sizes) {
    std::vector<std::unique_ptr<block>> group;
    for (int i = 0; i < n; ++i) group.push_back(std::move(blocks.at(next++)));
    stages.push_back(std::move(group));
  }
  return stages;
}

}  // namespace petra

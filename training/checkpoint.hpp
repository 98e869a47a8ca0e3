// The one checkpoint codec: every stage's state in one safetensors file, written atomically, read
// back with named errors, whatever runtime wrote or reads it.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "compute/pipeline/stage_state.hpp"

namespace petra {

/// A checkpoint read back: per stage its tensors and optimizer steps, and the file's metadata
/// (epoch, position, method, config, ...).
struct checkpoint {
  std::string path;
  std::map<std::string, std::string> metadata;
  std::vector<stage_snapshot> stages;
};

/// Writes `stages` (in order) and `metadata` to `path` atomically; adds format, stage_steps and
/// stage_tensors (how many tensors of the file, in order, belong to each stage).
void write_checkpoint(const std::string& path, const std::vector<stage_snapshot>& stages,
                      std::map<std::string, std::string> metadata);

/// Reads a checkpoint for a pipeline of `stage_count` stages; throws std::runtime_error naming the
/// file and what is wrong (not a petra checkpoint, another stage count, damaged metadata).
checkpoint read_checkpoint(const std::string& path, std::size_t stage_count);

}  // namespace petra

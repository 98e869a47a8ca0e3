// Checkpoints: every stage's weights, BN statistics and optimizer state in one
// safetensors file, written atomically. Tensor names:
//   param/<name>      weights (e.g. param/g1.b0.f.conv1.weight)
//   momentum/<name>   SGD momentum buffers
//   buffer/<name>     BN running statistics (…running_mean, …running_var)
// Metadata: format, epoch, method, optimizer steps per stage, the resolved config (YAML).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compute/pipeline/stage.hpp"

namespace petra::app {

void save_checkpoint(const std::string& path, std::vector<std::unique_ptr<stage>>& stages, backend& be,
                     std::map<std::string, std::string> metadata);

/// Restores weights, momentum, BN statistics and step counts; every tensor must be present with
/// its shape, else an error names the tensor and the file. Returns the metadata.
std::map<std::string, std::string> load_checkpoint(const std::string& path,
                                                   std::vector<std::unique_ptr<stage>>& stages, backend& be);

}  // namespace petra::app

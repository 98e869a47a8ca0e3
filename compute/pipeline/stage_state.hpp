// A stage's state as named host tensors (what a checkpoint holds), and its restore.
//   param/<name>      weights          momentum/<name>   SGD momentum
//   buffer/<name>     BN running statistics
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compute/pipeline/stage.hpp"

namespace petra {

std::vector<std::pair<std::string, tensor>> export_stage_state(stage& s, backend& be);

/// Restores every tensor of the stage from `lookup(name)`, which returns the host tensor or
/// throws naming what is missing; a shape mismatch throws naming the tensor and both shapes.
void import_stage_state(stage& s, backend& be, const std::function<const tensor&(const std::string&)>& lookup);

}  // namespace petra

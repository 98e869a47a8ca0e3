// A stage's state as named host tensors (what a checkpoint holds), and its restore.
//   param/<name>      weights          momentum/<name>   SGD momentum
//   buffer/<name>     BN running statistics
#pragma once

#include <string>
#include <vector>

#include "compute/pipeline/stage.hpp"

namespace petra {

struct named_tensor {
  std::string name;
  tensor value;
};

/// One stage's whole state: its tensors on the host and the optimizer steps it has taken.
struct stage_snapshot {
  int32_t stage = -1;  // 0-based
  int64_t optimizer_steps = 0;
  std::vector<named_tensor> tensors;
};

/// The state of `s`, whose tensors live on `be`.
stage_snapshot snapshot_stage(stage& s, backend& be);

/// Restores every tensor of `s` from `from` (which may hold other stages' tensors too) and its
/// optimizer steps; a missing tensor or a shape mismatch throws naming the tensor (and both shapes).
void restore_stage(stage& s, backend& be, const stage_snapshot& from);

}  // namespace petra

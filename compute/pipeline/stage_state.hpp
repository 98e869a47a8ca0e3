// A stage's state as named host tensors (what a checkpoint holds), and its restore.
//   param/<name>      weights          momentum/<name>       SGD momentum or AdamW's first moment
//   buffer/<name>     BN running statistics                second_moment/<name>  AdamW's second moment
#pragma once

#include <functional>
#include <map>
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

/// The optimizer state of `params` (on `be`) into `into`: `prefix`momentum/<name> and, under AdamW,
/// `prefix`second_moment/<name>.
void save_optimizer_state(const std::vector<parameter*>& params, backend& be, const std::string& prefix,
                          std::vector<named_tensor>& into);

/// Restores what save_optimizer_state wrote, each tensor through `restore` (which throws for a
/// missing one); `names` are the snapshot's tensors. A snapshot of the other optimizer (second
/// moments where the run has none, or none where it has) throws naming both optimizers.
void restore_optimizer_state(const std::vector<parameter*>& params, const std::string& prefix,
                             const std::map<std::string, const tensor*>& names,
                             const std::function<void(const std::string&, tensor&)>& restore);

/// The state of `s`, whose tensors live on `be`.
stage_snapshot snapshot_stage(stage& s, backend& be);

/// Restores every tensor of `s` from `from` (which may hold other stages' tensors too) and its
/// optimizer steps; a missing tensor or a shape mismatch throws naming the tensor (and both shapes).
void restore_stage(stage& s, backend& be, const stage_snapshot& from);

}  // namespace petra

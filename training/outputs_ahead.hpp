// PaReprop across stages, the receiving side: rebuilt outputs sent ahead of their gradients by the
// stage after, kept by micro-batch until the stage's next backward is theirs; then the stage starts
// its last block's rebuild from one (stage::rebuild_ahead).
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "compute/pipeline/stage.hpp"

namespace petra {

class outputs_ahead {
 public:
  /// Keeps micro-batch `id`'s rebuilt output (the tensors its backward message will carry too:
  /// nothing more is held).
  void keep(int64_t id, activation output) { kept_[id] = std::move(output); }
  /// Forgets the outputs of micro-batches no longer outstanding at `s`, and starts the rebuild of
  /// the one whose backward is next there, if kept (`take_in` makes it usable on the stage's device).
  void start_next(stage& s, const std::function<activation(const activation&)>& take_in);
  void clear() { kept_.clear(); }

 private:
  std::map<int64_t, activation> kept_;
};

}  // namespace petra

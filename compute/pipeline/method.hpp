// The training methods of DESIGN.md §1 and what each asks of a stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "compute/pipeline/stage.hpp"

namespace petra {

enum class method_kind { backprop, delayed, petra };

struct method_options {
  method_kind kind = method_kind::petra;
  bool stash_inputs = false;   // delayed: every stage keeps its inputs
  bool stash_weights = false;  // delayed: backward with the forward's weights

  /// "backprop", "petra", "delayed+inputs+weights", ...
  std::string str() const;
  /// Options of one stage; non-reversible stages keep inputs whatever this says.
  stage_options for_stage(int inversion_sample_every) const;
};

}  // namespace petra

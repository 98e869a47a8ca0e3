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

/// Ticks between two micro-batches entering a pipeline of J stages: backprop keeps one micro-batch in
/// flight (its round trip takes 2J − 1 ticks), every other method feeds one per tick.
int64_t entry_spacing(method_kind kind, std::size_t J);

}  // namespace petra

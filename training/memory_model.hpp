// The paper's analytic memory table (docs/design.md §2 convention) and, beside it, the
// bytes our runtime holds under the same schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/blocks/block.hpp"
#include "compute/optimizer.hpp"
#include "training/method.hpp"

namespace petra {

/// One stage as the memory model sees it.
struct stage_profile {
  std::string name;  // its blocks, e.g. "g2.b0"
  bool is_stem = false;
  bool is_downsampling = false;  // holds a downsampling block
  bool reversible = false;
  int64_t params = 0;         // trainable values
  int64_t buffers = 0;        // BN running statistics
  int optimizer_moments = 1;  // optimizer tensors per parameter: SGD's momentum 1, AdamW's moments 2
  activation_shape input;     // one micro-batch
  activation_shape output;    // one micro-batch
};

/// Profiles of the stages (grouped blocks), propagating shapes from `input`, trained by `optimizer`.
std::vector<stage_profile> profile_stages(std::vector<std::vector<std::unique_ptr<block>>>& stages,
                                          const activation_shape& input,
                                          optimizer_kind optimizer = optimizer_kind::sgd);

struct memory_row {
  bool stash_inputs = false;
  bool stash_weights = false;
  double paper_gb = 0;    // the paper's convention, 10⁹ bytes
  double runtime_gb = 0;  // what our stages hold: weights, gradients, optimizer state, BN, FIFO, stash
};

/// The four rows of the paper's table (inputs+weights, inputs, weights, neither), in that order;
/// the runtime column counts inversion samples taken on 1 in `inversion_sample_every` micro-batches
/// and the tick order (`backward_first`: training.tick_order).
std::vector<memory_row> memory_table(const std::vector<stage_profile>& stages, int accumulation,
                                     int inversion_sample_every, bool backward_first = false);

/// Our runtime's bytes for one stage j (0-based) of J under a method: parameters, gradients,
/// momentum, BN statistics, the input FIFO peak (2(J−j)+1 inputs when kept; else, at a reversible
/// stage, ⌈(2(J−j)+1)/N⌉ inputs sampled for the inversion error on 1 in N = inversion_sample_every
/// micro-batches, 0 = never) and the weight stash peak (⌈2(J−j)/k⌉+1 copies: every version an
/// outstanding forward used). With `backward_first` (training.tick_order) every stage but the last
/// holds one forward fewer: 2(J−j) inputs, ⌈(2(J−j)−1)/k⌉+1 weight copies.
int64_t runtime_stage_bytes(const stage_profile& s, std::size_t j, std::size_t J, bool keep_inputs,
                            bool stash_weights, int accumulation, int inversion_sample_every,
                            bool backward_first = false);

/// What adaptive fallback (training.max_inversion_error) adds to stage j while that stage, which
/// rebuilds its inputs, keeps them instead: its FIFO peak of kept inputs (2(J−j)+1, or 2(J−j) with
/// `backward_first`) in place of the inversion samples' (a sampled rebuild is compared with the kept
/// input then). 0 at a stage that cannot rebuild (it keeps its inputs anyway).
int64_t fallback_stage_bytes(const stage_profile& s, std::size_t j, std::size_t J, int accumulation,
                             int inversion_sample_every, bool backward_first = false);

/// forward_gradient's bytes for stage j (0-based) of J: parameters, gradients, momentum and BN statistics
/// of the stage and of its auxiliary head (`aux_params`, `aux_buffers`; 0 at the last stage), and per
/// forward awaiting its backward — J − j + 1 at the peak under a global target (the derivatives come
/// back J − j ticks after the forward), 1 under a local target and at the last stage — the kept input
/// and the guess (one output). The tangents a stage receives and sends (j in, j + 1 out, each the size
/// of an input or output) live for one tick, as messages do, and are not counted.
int64_t forward_gradient_stage_bytes(const stage_profile& s, std::size_t j, std::size_t J, int64_t aux_params,
                                     int64_t aux_buffers, bool local_target);

}  // namespace petra

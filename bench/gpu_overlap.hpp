// bench_gpu_step's overlap measurements: a reversible stage's backward in the plain order against
// PaReprop's overlapped rebuild on a second stream (a second CUDA backend), median ms of each,
// timed round-robin on the same input. Each prints one JSON line per shape.
#pragma once

#include <vector>

#include "compute/backend_factory.hpp"

namespace petra::bench {

/// (b) A stage of 3 basic couplings at RevNet-18's widths (64 to 512 channels, 32² to 4²), micro-
/// batch 32 and 128; `iters` timed backwards per schedule and shape, after 3.
void bench_overlap(backend& be, const backend_options& options, math_precision precision, int iters);

/// (d) A stage of 3 RevViT blocks (ViT-S, -B, -L: width, heads; 197 tokens, MLP 4×) at each
/// micro-batch of `batches`, plain against overlapped as in (b). PaReprop reports its gains here: a
/// transformer block's rebuild is a whole forward of attention and MLP, long enough to hide behind
/// the previous block's gradients. A shape that fails (out of memory at the largest) prints its
/// error and the others still run.
void bench_transformer_overlap(backend& be, const backend_options& options, math_precision precision,
                               int iters, const std::vector<int>& batches);

}  // namespace petra::bench

// Stacked tangents: m tangents of one primal (batch N) carried as one tensor of batch m·N, group g
// being samples [g·N, (g + 1)·N). Ops linear in the tangent and per sample run on the stack as one
// bigger call; ops whose tangent depends on the primal per sample or on batch statistics run per
// group. These are the batch-axis helpers both kinds use (NCHW and (N, F) are batch-major, so a
// group is one contiguous run of floats and a view of it costs nothing).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compute/backend.hpp"
#include "compute/parameter.hpp"

namespace petra {

/// Samples [first, first + count) of `t` as a view sharing its storage (never to be written
/// through once `t` is shared).
tensor batch_slice(const tensor& t, int64_t first, int64_t count);

/// m such that the tangent's batch is m·n (n > 0): `op` and `what` name the caller in the error
/// thrown when it is not a multiple.
int64_t stacked_groups(const tensor& tangent, int64_t n, const char* op, const char* what);

/// The parts concatenated along the batch, each of the others' per-sample shape: one part as it is,
/// parts that already lie back to back in one storage as a view of them, else one copy.
tensor stack_batches(backend& be, const std::vector<tensor>& parts);

/// `t` repeated m times along the batch (`t` itself when m is 1).
tensor tile_batch(backend& be, const tensor& t, int64_t m);

/// [f(group 0), …, f(group m−1)] stacked, the groups being the n-sample runs of `stacked`; f of a
/// group returns a tensor whose batch is n.
tensor per_group(backend& be, const tensor& stacked, int64_t n,
                 const std::function<tensor(const tensor&)>& f);

/// Tangents of one activation stacked stream by stream. A stream that is zero (undefined) in some
/// tangents but not all is filled with zeros there; a stream zero in all stays undefined.
activation stack_tangents(backend& be, const std::vector<activation>& tangents);

/// Group g of m of a stacked tangent (views; an undefined stream stays undefined).
activation tangent_group(const activation& stacked, int64_t g, int64_t m);

}  // namespace petra

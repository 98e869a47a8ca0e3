// Runs the op table on a backend and on the CPU reference, and holds every result to the
// reference's: bit for bit, or within a GPU's fp32 or TF32 tolerances.
#pragma once

#include "compute/backend.hpp"
#include "tests/backends/op_table.hpp"

namespace petra::testing {

enum class measure {
  bitwise,   // the CPU and sim backends: the same kernels, the same bits
  gpu_fp32,  // a deterministic fp32 GPU backend: each result within its parity
  gpu_tf32,  // a GPU backend with TF32: only the cases with a tf32 result
};

/// The results of `c` run on `be`, brought to the host.
op_result run_on(backend& be, const op_case& c);

/// Every case of the table (those with a tf32 result for gpu_tf32) on `be` against `reference`;
/// returns how many cases ran.
int check_table(backend& be, backend& reference, measure m);

}  // namespace petra::testing

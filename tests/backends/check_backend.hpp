// Runs the op table on a backend and on the CPU reference, and holds every result to the
// reference's: bit for bit, within a GPU's fp32 or TF32 tolerances, or within the bf16 bound.
#pragma once

#include "compute/backend.hpp"
#include "tests/backends/op_table.hpp"

namespace petra::testing {

enum class measure {
  bitwise,   // the CPU and sim backends: the same kernels, the same bits
  gpu_fp32,  // a deterministic fp32 GPU backend: each result within its parity
  gpu_tf32,  // a GPU backend with TF32: only the cases with a tf32 result
  bf16,      // a CPU or sim backend in bf16 against the fp32 CPU: each result by its bf16 rule
  gpu_bf16,  // a GPU backend in bf16_emulated against the fp32 CPU: bf16 rule products, else its parity
  gpu_bf16_tensor_cores,  // a GPU backend in bf16 against the fp32 CPU: as gpu_bf16, the tensor-core bound
};

/// The results of `c` run on `be`, brought to the host.
op_result run_on(backend& be, const op_case& c);

/// Every case of the table (those with a tf32 result for gpu_tf32) on `be` against `reference`;
/// returns how many cases ran.
int check_table(backend& be, backend& reference, measure m);

}  // namespace petra::testing

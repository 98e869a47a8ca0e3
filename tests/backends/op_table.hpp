// The op table: cases that together call every op of the backend interface, each with host
// inputs, a run on one backend, and how closely a GPU must follow the CPU on each result. The
// test runs every case on every backend present against the CPU (as ggml's test-backend-ops).
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compute/backend.hpp"

namespace petra::testing {

/// How a result of a GPU is held to the CPU's (the CPU and sim backends are always bit for bit).
enum class parity {
  exact,     // copies, selections, maxima: the same bits
  rounding,  // fp32 arithmetic in another order: within op_tolerance
  tf32,      // a convolution or GEMM: as rounding, and also run on a TF32 backend (tf32_tolerance)
};

/// The bf16 column: how a result of a bf16 backend (CPU, sim) is held to the fp32 CPU's.
enum class bf16_rule {
  same,      // no rounded operand reaches it: the same bits as fp32 (a GPU: within its parity)
  products,  // sums of products of bf16-rounded operands: within bf16_bound (parity_measures.hpp)
};

/// What a case's run leaves: tensors of the backend, host tensors (what to_host and an export to
/// the host return: the same bits on every backend), and scalars.
struct op_result {
  std::vector<tensor> tensors = {};
  std::vector<double> scalars = {};
  std::vector<tensor> host_tensors = {};
};

struct op_case {
  std::string name;            // the ops and shapes, for the failure message
  std::vector<tensor> inputs;  // host tensors (or undefined), given to each backend by from_host
  /// Runs on one backend, given that backend's copies of `inputs` (it may write into them).
  std::function<op_result(backend&, std::vector<tensor>&)> run;
  std::vector<parity> parities;      // one per result tensor, or a single one for all of them
  std::vector<bf16_rule> bf16 = {};  // as parities; none: every result bf16_rule::same
};

/// The whole table, in the order below.
std::vector<op_case> op_table();

// One family of ops each (the files of the same names).
std::vector<op_case> convolution_cases();
std::vector<op_case> batch_norm_cases();
std::vector<op_case> elementwise_cases();  // pointwise, pooling, channels
std::vector<op_case> dense_cases();        // linear, loss, optimizer
std::vector<op_case>
token_cases();  // layer norm, GELU, softmax, batched matmul, token mean, scale, transpose12
std::vector<op_case> memory_cases();  // memory and hand-over

}  // namespace petra::testing

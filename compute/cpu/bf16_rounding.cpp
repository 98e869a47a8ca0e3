// bf16 operands in fp32 storage: each value rounded to the nearest bf16 (ties to even, as
// round_to_bf16 in compute/precision.hpp), for the ops that round their operands themselves
// (linear; conv2d in bf16_emulated).
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/parallel.hpp"

namespace petra {

tensor cpu_backend::rounded_to_bf16(const tensor& t) {
  tensor rounded = output(t.shape());
  const float* in = t.data();
  float* out = rounded.data();
  const int64_t n = t.numel();
#pragma omp parallel for num_threads(cpu::team_for(n, threads_))
  for (int64_t i = 0; i < n; ++i) out[i] = round_to_bf16(in[i]);
  return rounded;
}

tensor cpu_backend::gemm_operand(const tensor& t) {
  return rounds_to_bf16(precision_) ? rounded_to_bf16(t) : t;
}

tensor cpu_backend::conv_operand(const tensor& t) {
  return precision_ == math_precision::bf16_emulated ? rounded_to_bf16(t) : t;
}

}  // namespace petra

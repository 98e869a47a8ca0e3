// bf16 on the GPU: convolution and GEMM operands rounded to bf16 by a kernel, then the fp32
// cuDNN/cuBLAS paths (FMA math, no TF32): a product of two bf16 values is exact in fp32, so this
// is bf16 arithmetic with fp32 accumulation, the CPU backend's numerics (compute/precision.hpp).
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

tensor cuda_backend::bf16_operand(const tensor& t) {
  if (!rounds_to_bf16(precision_)) return t;
  tensor rounded = output(t.shape());
  cuda::kernels::round_to_bf16(t.data(), rounded.data(), t.numel(), stream());
  return rounded;
}

}  // namespace petra

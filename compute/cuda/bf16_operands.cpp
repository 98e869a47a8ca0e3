// The operands of the GPU's convolutions and GEMMs in bf16. bf16_emulated: rounded to bf16 by a
// kernel, kept as fp32, then the fp32 cuDNN/cuBLAS paths (FMA math, no TF32): a product of two
// bf16 values is exact in fp32, so this is bf16 arithmetic with fp32 accumulation, the CPU
// backend's numerics (compute/precision.hpp). bf16: converted to 2-byte bf16 buffers with the same
// rounding, which the tensor-core paths read (conv2d_bf16.cpp, linear.cpp).
#include "compute/cuda/bf16_kernels.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

uint16_t* cuda::bf16_buffer::data() const { return static_cast<uint16_t*>(storage->data()); }

tensor cuda_backend::bf16_operand(const tensor& t) {
  if (!rounds_to_bf16(precision_)) return t;
  tensor rounded = output(t.shape());
  cuda::kernels::round_to_bf16(t.data(), rounded.data(), t.numel(), stream());
  return rounded;
}

cuda::bf16_buffer cuda_backend::bf16_scratch(int64_t count) {
  return {context_->allocate(static_cast<std::size_t>(count) * sizeof(uint16_t))};
}

cuda::bf16_buffer cuda_backend::to_bf16(const tensor& t) {
  cuda::bf16_buffer copy = bf16_scratch(t.numel());
  cuda::kernels::to_bf16(t.data(), copy.data(), t.numel(), stream());
  return copy;
}

}  // namespace petra

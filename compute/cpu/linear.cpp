// Fully connected layer y = x (N,I) · wᵀ + b by row-major SGEMMs on the backend's threads. In bf16 the GEMMs'
// operands are rounded to bf16 first: a product of two bf16 values (8 + 8 significant bits) is
// exact in fp32, so an SGEMM of rounded operands is a bf16 GEMM with fp32 accumulation, the same
// arithmetic as a bf16 matmul kernel; the head's GEMMs are too small for bf16 kernels to pay.
// The bias and its gradient are sums of fp32 values, never rounded.
#include "compute/cpu/cpu_backend.hpp"
#include "compute/cpu/gemm.hpp"

namespace petra {

tensor cpu_backend::linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) {
  const int64_t n = x.dim(0), in = x.dim(1), out = w.dim(0);
  tensor y = output({n, out});
  const tensor x_in = gemm_operand(x), w_in = gemm_operand(w);
  if (b.defined())
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) y.data()[i * out + o] = b.data()[o];
  cpu::sgemm(false, true, n, out, in, 1.f, x_in.data(), in, w_in.data(), in, b.defined() ? 1.f : 0.f,
             y.data(), out, threads_);
  return y;
}

tensor cpu_backend::linear_backward_data_impl(const tensor& dy, const tensor& w) {
  const int64_t n = dy.dim(0), out = w.dim(0), in = w.dim(1);
  tensor dx = output({n, in});
  const tensor dy_in = gemm_operand(dy), w_in = gemm_operand(w);
  cpu::sgemm(false, false, n, in, out, 1.f, dy_in.data(), out, w_in.data(), in, 0.f, dx.data(), in, threads_);
  return dx;
}

void cpu_backend::linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) {
  const int64_t n = x.dim(0), in = x.dim(1), out = dy.dim(1);
  const tensor dy_in = gemm_operand(dy), x_in = gemm_operand(x);
  cpu::sgemm(true, false, out, in, n, 1.f, dy_in.data(), out, x_in.data(), in, 1.f, dw.data(), in, threads_);
  if (db.defined())
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) db.data()[o] += dy.data()[i * out + o];
}

}  // namespace petra

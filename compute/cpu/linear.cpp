// Fully connected layer y = x (N,I) · wᵀ + b by OpenBLAS SGEMMs (row-major). In bf16 the GEMMs'
// operands are rounded to bf16 first: a product of two bf16 values (8 + 8 significant bits) is
// exact in fp32, so an SGEMM of rounded operands is a bf16 GEMM with fp32 accumulation, the same
// arithmetic as a bf16 matmul kernel; the head's GEMMs are too small for bf16 kernels to pay.
// The bias and its gradient are sums of fp32 values, never rounded.
#include <cblas.h>

#include "compute/cpu/cpu_backend.hpp"

namespace petra {

namespace {

// BLAS takes int extents; the shapes here are far below 2^31.
int blas_int(int64_t v) { return static_cast<int>(v); }

}  // namespace

tensor cpu_backend::linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) {
  const int64_t n = x.dim(0), in = x.dim(1), out = w.dim(0);
  tensor y = output({n, out});
  const tensor x_in = gemm_operand(x), w_in = gemm_operand(w);
  if (b.defined())
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) y.data()[i * out + o] = b.data()[o];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas_int(n), blas_int(out), blas_int(in), 1.f,
              x_in.data(), blas_int(in), w_in.data(), blas_int(in), b.defined() ? 1.f : 0.f, y.data(),
              blas_int(out));
  return y;
}

tensor cpu_backend::linear_backward_data_impl(const tensor& dy, const tensor& w) {
  const int64_t n = dy.dim(0), out = w.dim(0), in = w.dim(1);
  tensor dx = output({n, in});
  const tensor dy_in = gemm_operand(dy), w_in = gemm_operand(w);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_int(n), blas_int(in), blas_int(out), 1.f,
              dy_in.data(), blas_int(out), w_in.data(), blas_int(in), 0.f, dx.data(), blas_int(in));
  return dx;
}

void cpu_backend::linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) {
  const int64_t n = x.dim(0), in = x.dim(1), out = dy.dim(1);
  const tensor dy_in = gemm_operand(dy), x_in = gemm_operand(x);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, blas_int(out), blas_int(in), blas_int(n), 1.f,
              dy_in.data(), blas_int(out), x_in.data(), blas_int(in), 1.f, dw.data(), blas_int(in));
  if (db.defined())
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) db.data()[o] += dy.data()[i * out + o];
}

}  // namespace petra

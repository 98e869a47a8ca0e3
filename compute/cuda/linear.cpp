// Fully connected layer y = x (N,I) · wᵀ + b by cuBLAS. cuBLAS is column-major: a row-major
// (R, C) matrix is its (C, R) transpose, so each product below is written for the transposes. In
// bf16 the GEMMs' operands are rounded first (bf16_operands.cpp); the bias sums stay fp32.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

namespace {

const float one = 1.f, zero = 0.f;

}  // namespace

tensor cuda_backend::linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) {
  const char* op = "linear_forward";
  const int64_t n = x.dim(0), in = x.dim(1), out = w.dim(0);
  enter();
  tensor y = output({n, out});
  if (b.defined()) cuda::kernels::broadcast_rows(b.data(), y.data(), n, out, stream());
  if (n == 0 || out == 0) return y;
  if (in == 0) {
    if (!b.defined()) PETRA_CUDA_CHECK(cudaMemsetAsync(y.data(), 0, y.bytes(), stream()));
    return y;
  }
  const tensor x_in = bf16_operand(x), w_in = bf16_operand(w);
  // yᵀ (O, N) = w (O, I) · xᵀ (I, N); column-major w is (I, O), x is (I, N).
  PETRA_CUDA_CHECK(cublasSgemm(context_->blas(), CUBLAS_OP_T, CUBLAS_OP_N, cuda::to_int(op, "O", out),
                               cuda::to_int(op, "N", n), cuda::to_int(op, "I", in), &one, w_in.data(),
                               cuda::to_int(op, "I", in), x_in.data(), cuda::to_int(op, "I", in),
                               b.defined() ? &one : &zero, y.data(), cuda::to_int(op, "O", out)));
  return y;
}

tensor cuda_backend::linear_backward_data_impl(const tensor& dy, const tensor& w) {
  const char* op = "linear_backward_data";
  const int64_t n = dy.dim(0), out = w.dim(0), in = w.dim(1);
  enter();
  tensor dx = output({n, in});
  if (n == 0 || in == 0) return dx;
  if (out == 0) {
    PETRA_CUDA_CHECK(cudaMemsetAsync(dx.data(), 0, dx.bytes(), stream()));
    return dx;
  }
  const tensor dy_in = bf16_operand(dy), w_in = bf16_operand(w);
  // dxᵀ (I, N) = wᵀ (I, O) · dyᵀ (O, N); column-major w is wᵀ (I, O), dy is dyᵀ (O, N).
  PETRA_CUDA_CHECK(cublasSgemm(context_->blas(), CUBLAS_OP_N, CUBLAS_OP_N, cuda::to_int(op, "I", in),
                               cuda::to_int(op, "N", n), cuda::to_int(op, "O", out), &one, w_in.data(),
                               cuda::to_int(op, "I", in), dy_in.data(), cuda::to_int(op, "O", out), &zero,
                               dx.data(), cuda::to_int(op, "I", in)));
  return dx;
}

void cuda_backend::linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) {
  const char* op = "linear_backward_weight";
  const int64_t n = x.dim(0), in = x.dim(1), out = dy.dim(1);
  enter();
  if (n > 0 && in > 0 && out > 0) {
    const tensor x_in = bf16_operand(x), dy_in = bf16_operand(dy);
    // dwᵀ (I, O) += xᵀ (I, N) · dy (N, O); column-major x is xᵀ (I, N), dy is dyᵀ (O, N).
    PETRA_CUDA_CHECK(cublasSgemm(context_->blas(), CUBLAS_OP_N, CUBLAS_OP_T, cuda::to_int(op, "I", in),
                                 cuda::to_int(op, "O", out), cuda::to_int(op, "N", n), &one, x_in.data(),
                                 cuda::to_int(op, "I", in), dy_in.data(), cuda::to_int(op, "O", out), &one,
                                 dw.data(), cuda::to_int(op, "I", in)));
  }
  if (db.defined()) cuda::kernels::add_column_sums(dy.data(), db.data(), n, out, stream());
}

}  // namespace petra

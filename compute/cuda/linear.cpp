// Fully connected layer y = x (N,I) · wᵀ + b by cuBLAS. cuBLAS is column-major: a row-major
// (R, C) matrix is its (C, R) transpose, so each product below is written for the transposes. In
// bf16 the GEMMs read bf16 copies on tensor cores with fp32 results (no extra rounding: cuBLAS
// writes fp32 C); in bf16_emulated their operands are rounded first. The bias sums stay fp32.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cublas_library.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

namespace {

const float one = 1.f, zero = 0.f;

}  // namespace

void cuda_backend::gemm(cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const tensor& a,
                        int lda, const tensor& b, int ldb, float beta, float* c, int ldc) {
  if (tensor_core_bf16()) {
    const cuda::bf16_buffer a16 = to_bf16(a), b16 = to_bf16(b);
    PETRA_CUDA_CHECK(cuda::cublas().gemm_ex(context_->blas(), op_a, op_b, m, n, k, &one, a16.data(),
                                            CUDA_R_16BF, lda, b16.data(), CUDA_R_16BF, ldb, &beta, c,
                                            CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  const tensor a_in = bf16_operand(a), b_in = bf16_operand(b);
  PETRA_CUDA_CHECK(cuda::cublas().sgemm(context_->blas(), op_a, op_b, m, n, k, &one, a_in.data(), lda,
                                        b_in.data(), ldb, &beta, c, ldc));
}

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
  // yᵀ (O, N) = w (O, I) · xᵀ (I, N); column-major w is (I, O), x is (I, N).
  const int o_ = cuda::to_int(op, "O", out), n_ = cuda::to_int(op, "N", n), i_ = cuda::to_int(op, "I", in);
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, o_, n_, i_, w, i_, x, i_, b.defined() ? one : zero, y.data(), o_);
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
  // dxᵀ (I, N) = wᵀ (I, O) · dyᵀ (O, N); column-major w is wᵀ (I, O), dy is dyᵀ (O, N).
  const int o_ = cuda::to_int(op, "O", out), n_ = cuda::to_int(op, "N", n), i_ = cuda::to_int(op, "I", in);
  gemm(CUBLAS_OP_N, CUBLAS_OP_N, i_, n_, o_, w, i_, dy, o_, zero, dx.data(), i_);
  return dx;
}

void cuda_backend::linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) {
  const char* op = "linear_backward_weight";
  const int64_t n = x.dim(0), in = x.dim(1), out = dy.dim(1);
  enter();
  if (n > 0 && in > 0 && out > 0) {
    // dwᵀ (I, O) += xᵀ (I, N) · dy (N, O); column-major x is xᵀ (I, N), dy is dyᵀ (O, N).
    const int o_ = cuda::to_int(op, "O", out), n_ = cuda::to_int(op, "N", n), i_ = cuda::to_int(op, "I", in);
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, i_, o_, n_, x, i_, dy, o_, one, dw.data(), i_);
  }
  if (db.defined()) cuda::kernels::add_column_sums(dy.data(), db.data(), n, out, stream());
}

}  // namespace petra

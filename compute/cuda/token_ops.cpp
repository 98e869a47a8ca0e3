// The token ops on the GPU: layer norm, GELU, softmax, the token mean, the scale and transpose12 by
// our kernels (token_kernels.cu), the batched matmul and its backward by cuBLAS strided batched
// GEMMs (in bf16 cublasGemmStridedBatchedEx on bf16 copies with fp32 results, as linear's GEMMs).
#include "compute/batched_matmul_gradients.hpp"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cublas_library.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/token_kernels.hpp"

namespace petra {

namespace {

const float one = 1.f, zero = 0.f;

}  // namespace

// --- layer norm -------------------------------------------------------------------------------

tensor cuda_backend::layer_norm_forward_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                             float eps, layer_norm_saved& saved) {
  enter();
  saved.mean = output({x.dim(0), x.dim(1)});
  saved.inv_std = output({x.dim(0), x.dim(1)});
  tensor y = output(x.shape());
  cuda::kernels::layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), saved.mean.data(),
                                    saved.inv_std.data(), x.dim(0) * x.dim(1), x.dim(2), eps, stream());
  return y;
}

tensor cuda_backend::layer_norm_backward_impl(const tensor& x, const tensor& gamma,
                                              const layer_norm_saved& saved, const tensor& dy, tensor& dgamma,
                                              tensor& dbeta) {
  const int64_t tokens = x.dim(0) * x.dim(1), c = x.dim(2);
  enter();
  tensor dx = output(x.shape());
  cuda::kernels::layer_norm_project(x.data(), dy.data(), gamma.data(), nullptr, saved.mean.data(),
                                    saved.inv_std.data(), dx.data(), tokens, c, stream());
  cuda::kernels::layer_norm_parameter_gradients(x.data(), dy.data(), saved.mean.data(), saved.inv_std.data(),
                                                dgamma.data(), dbeta.data(), tokens, c, stream());
  return dx;
}

tensor cuda_backend::layer_norm_jvp_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                         const tensor& x_dot) {
  enter();
  tensor y_dot = output(x.shape());
  cuda::kernels::layer_norm_project(x.data(), x_dot.data(), nullptr, gamma.data(), saved.mean.data(),
                                    saved.inv_std.data(), y_dot.data(), x.dim(0) * x.dim(1), x.dim(2),
                                    stream());
  return y_dot;
}

// --- GELU and softmax -------------------------------------------------------------------------

tensor cuda_backend::gelu_forward_impl(const tensor& x) {
  enter();
  tensor y = output(x.shape());
  cuda::kernels::gelu_forward(x.data(), y.data(), x.numel(), stream());
  return y;
}

tensor cuda_backend::gelu_backward_impl(const tensor& x, const tensor& dy) {
  enter();
  tensor dx = output(x.shape());
  cuda::kernels::gelu_backward(x.data(), dy.data(), dx.data(), x.numel(), stream());
  return dx;
}

tensor cuda_backend::softmax_forward_impl(const tensor& x) {
  const int64_t k = x.dim(x.rank() - 1);
  enter();
  tensor y = output(x.shape());
  cuda::kernels::softmax_forward(x.data(), y.data(), x.numel() / k, k, stream());
  return y;
}

tensor cuda_backend::softmax_backward_impl(const tensor& y, const tensor& dy) {
  const int64_t k = y.dim(y.rank() - 1);
  enter();
  tensor dx = output(y.shape());
  cuda::kernels::softmax_backward(y.data(), dy.data(), dx.data(), y.numel() / k, k, stream());
  return dx;
}

// --- batched matmul ---------------------------------------------------------------------------

void cuda_backend::batched_gemm(const char* op, const tensor& a, bool transpose_a, const tensor& b,
                                bool transpose_b, tensor& c) {
  const int64_t batch = c.dim(0), m = c.dim(1), n = c.dim(2), k = transpose_a ? a.dim(1) : a.dim(2);
  if (c.numel() == 0) return;
  if (k == 0) {
    PETRA_CUDA_CHECK(cudaMemsetAsync(c.data(), 0, c.bytes(), stream()));
    return;
  }
  const int m_ = cuda::to_int(op, "M", m), n_ = cuda::to_int(op, "N", n), k_ = cuda::to_int(op, "K", k);
  const int batch_ = cuda::to_int(op, "B", batch);
  // Row-major c (m, n) is column-major cᵀ (n, m) = op(b)ᵀ·op(a)ᵀ: b first, each operand's
  // column-major view being the transpose of its row-major one, so the ops stay as given.
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = transpose_a ? m_ : k_, ldb = transpose_b ? k_ : n_;
  const long long stride_a = m * k, stride_b = k * n, stride_c = m * n;
  if (tensor_core_bf16()) {
    const cuda::bf16_buffer a16 = to_bf16(a), b16 = to_bf16(b);
    PETRA_CUDA_CHECK(cuda::cublas().gemm_strided_batched_ex(
        context_->blas(), op_b, op_a, n_, m_, k_, &one, b16.data(), CUDA_R_16BF, ldb, stride_b, a16.data(),
        CUDA_R_16BF, lda, stride_a, &zero, c.data(), CUDA_R_32F, n_, stride_c, batch_, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
    return;
  }
  const tensor a_in = bf16_operand(a), b_in = bf16_operand(b);
  PETRA_CUDA_CHECK(cuda::cublas().sgemm_strided_batched(context_->blas(), op_b, op_a, n_, m_, k_, &one,
                                                        b_in.data(), ldb, stride_b, a_in.data(), lda,
                                                        stride_a, &zero, c.data(), n_, stride_c, batch_));
}

tensor cuda_backend::batched_matmul_impl(const tensor& a, const tensor& b, bool transpose_a,
                                         bool transpose_b) {
  enter();
  tensor c = output({a.dim(0), transpose_a ? a.dim(2) : a.dim(1), transpose_b ? b.dim(1) : b.dim(2)});
  batched_gemm("batched_matmul", a, transpose_a, b, transpose_b, c);
  return c;
}

std::pair<tensor, tensor> cuda_backend::batched_matmul_backward_impl(const tensor& a, const tensor& b,
                                                                     const tensor& dc, bool transpose_a,
                                                                     bool transpose_b) {
  const char* op = "batched_matmul_backward";
  enter();
  tensor da = output(a.shape()), db = output(b.shape());
  const auto [for_da, for_db] = batched_matmul_gradient_products(transpose_a, transpose_b);
  batched_gemm(op, pick(for_da.first, a, b, dc), for_da.transpose_first, pick(for_da.second, a, b, dc),
               for_da.transpose_second, da);
  batched_gemm(op, pick(for_db.first, a, b, dc), for_db.transpose_first, pick(for_db.second, a, b, dc),
               for_db.transpose_second, db);
  return {da, db};
}

// --- token mean -------------------------------------------------------------------------------

tensor cuda_backend::token_mean_forward_impl(const tensor& x) {
  enter();
  tensor y = output({x.dim(0), x.dim(2)});
  cuda::kernels::token_mean_forward(x.data(), y.data(), x.dim(0), x.dim(1), x.dim(2), stream());
  return y;
}

tensor cuda_backend::token_mean_backward_impl(const tensor& dy, const shape_t& x_shape) {
  enter();
  tensor dx = output(x_shape);
  cuda::kernels::token_mean_backward(dy.data(), dx.data(), x_shape[0], x_shape[1], x_shape[2], stream());
  return dx;
}

// --- scale and transpose12 ---------------------------------------------------------------------

tensor cuda_backend::scale_impl(const tensor& x, float alpha) {
  enter();
  tensor y = output(x.shape());
  cuda::kernels::scale(x.data(), y.data(), x.numel(), alpha, stream());
  return y;
}

tensor cuda_backend::transpose12_impl(const tensor& x) {
  enter();
  tensor y = output({x.dim(0), x.dim(2), x.dim(1), x.dim(3)});
  cuda::kernels::transpose12(x.data(), y.data(), x.dim(0), x.dim(1), x.dim(2), x.dim(3), stream());
  return y;
}

}  // namespace petra

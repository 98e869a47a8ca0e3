// Fully connected layer y = x (N,I) · wᵀ + b by OpenBLAS SGEMMs (row-major).
#include <cblas.h>

#include "compute/cpu/checks.hpp"
#include "compute/cpu/cpu_backend.hpp"
#include "compute/op_checks.hpp"

namespace petra {

namespace {

using cpu::fail;

void require_weights(const char* op, const tensor& w) { cpu::require_host(op, "w", w, 2, "(O, I)"); }

// BLAS takes int extents; the shapes here are far below 2^31.
int blas_int(int64_t v) { return static_cast<int>(v); }

}  // namespace

tensor cpu_backend::linear_forward(const tensor& x, const tensor& w, const tensor& b) {
  const char* op = "linear_forward";
  cpu::require_host(op, "x", x, 2, "(N, I)");
  require_weights(op, w);
  const int64_t n = x.dim(0), in = x.dim(1), out = w.dim(0);
  if (w.dim(1) != in)
    fail(op, "x " + x.shape_str() + " has " + std::to_string(in) + " features but w " + w.shape_str() +
                 " expects " + std::to_string(w.dim(1)));
  if (b.defined()) cpu::require_vector(op, "b", b, out, "w's outputs (O)");
  tensor y = output({n, out});
  if (b.defined())
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) y.data()[i * out + o] = b.data()[o];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas_int(n), blas_int(out), blas_int(in), 1.f,
              x.data(), blas_int(in), w.data(), blas_int(in), b.defined() ? 1.f : 0.f, y.data(),
              blas_int(out));
  return y;
}

tensor cpu_backend::linear_backward_data(const tensor& dy, const tensor& w) {
  const char* op = "linear_backward_data";
  cpu::require_host(op, "dy", dy, 2, "(N, O)");
  require_weights(op, w);
  const int64_t n = dy.dim(0), out = w.dim(0), in = w.dim(1);
  if (dy.dim(1) != out)
    fail(op, "dy " + dy.shape_str() + " has " + std::to_string(dy.dim(1)) + " outputs but w " +
                 w.shape_str() + " has " + std::to_string(out));
  tensor dx = output({n, in});
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_int(n), blas_int(in), blas_int(out), 1.f,
              dy.data(), blas_int(out), w.data(), blas_int(in), 0.f, dx.data(), blas_int(in));
  return dx;
}

void cpu_backend::linear_backward_weight(const tensor& x, const tensor& dy, tensor& dw, tensor& db) {
  const char* op = "linear_backward_weight";
  cpu::require_host(op, "x", x, 2, "(N, I)");
  cpu::require_host(op, "dy", dy, 2, "(N, O)");
  cpu::require_host(op, "dw", dw, 2, "(O, I)");
  check_linear_weight_grad_shapes(op, x, dy, dw);
  const int64_t n = x.dim(0), in = x.dim(1), out = dy.dim(1);
  if (db.defined()) cpu::require_vector(op, "db", db, out, "dy's outputs (O)");
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, blas_int(out), blas_int(in), blas_int(n), 1.f,
              dy.data(), blas_int(out), x.data(), blas_int(in), 1.f, dw.data(), blas_int(in));
  if (db.defined())
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) db.data()[o] += dy.data()[i * out + o];
}

}  // namespace petra

#include "compute/cpu/gemm.hpp"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

#include "compute/cpu/parallel.hpp"

namespace petra::cpu {

namespace {

// Rows of C per block: a block's SGEMM is the same call whatever the thread count.
constexpr int64_t rows_per_block = 64;

// Runs gemm_block(i) for i < count, each a single-threaded SGEMM, on up to `threads` threads (fewer
// when `work` multiply-adds do not pay for them); throws naming m×n×k if one was refused.
template <class Block>
void run_blocks(int64_t count, int64_t work, int threads, int64_t m, int64_t n, int64_t k, Block gemm_block) {
  std::atomic<bool> ok{true};
  const int team = static_cast<int>(std::min<int64_t>(count, team_for(work, threads)));
  omp_threads_scope one(1);  // each block's SGEMM on its own thread: oneDNN sees a team of one
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
  for (int64_t i = 0; i < count; ++i)
    if (!gemm_block(i)) ok.store(false, std::memory_order_relaxed);
  if (!ok.load())
    throw std::runtime_error("sgemm " + std::to_string(m) + "×" + std::to_string(n) + "×" +
                             std::to_string(k) + ": refused by oneDNN");
}

}  // namespace

bool sgemm_single(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc) {
  return dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c,
                    ldc) == dnnl_success;
}

void sgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int threads) {
  if (m <= 0 || n <= 0) return;
  const int64_t blocks = (m + rows_per_block - 1) / rows_per_block;
  // Row block r of op(A): rows r·64… of A, or its columns when A is transposed.
  const auto a_block = [&](int64_t row) { return transpose_a ? a + row : a + row * lda; };
  run_blocks(blocks, m * n * std::max<int64_t>(k, 1), threads, m, n, k, [&](int64_t r) {
    const int64_t row = r * rows_per_block, rows = std::min(rows_per_block, m - row);
    return sgemm_single(transpose_a, transpose_b, rows, n, k, alpha, a_block(row), lda, b, ldb, beta,
                        c + row * ldc, ldc);
  });
}

void sgemm_batch(bool transpose_a, bool transpose_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                 const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b,
                 float* c, int64_t ldc, int64_t stride_c, int threads) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  run_blocks(batch, batch * m * n * std::max<int64_t>(k, 1), threads, m, n, k, [&](int64_t i) {
    return sgemm_single(transpose_a, transpose_b, m, n, k, 1.f, a + i * stride_a, lda, b + i * stride_b, ldb,
                        0.f, c + i * stride_c, ldc);
  });
}

}  // namespace petra::cpu

// Row-major SGEMMs on the calling backend's OpenMP team (oneDNN's dnnl_sgemm), so that a stage's
// matrix products use its own threads and no more. OpenBLAS's SGEMM ran on a pool of its own of
// one thread per core whatever the stage's count, whose waiting threads spun in sched_yield: with
// eight stages on two cores every stage's linear layers took both cores.
#pragma once

#include <cstdint>

namespace petra::cpu {

/// C (m, n) = alpha · op(A) · op(B) + beta · C, row-major, op(X) = Xᵀ when its flag is set, on up
/// to `threads` OpenMP threads of the calling thread. The rows of C are cut into blocks of a fixed
/// size, each one single-threaded SGEMM, so the bits do not depend on `threads`. Throws
/// std::runtime_error if oneDNN refuses.
void sgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int threads);

/// One SGEMM on the calling thread alone (its caller has set oneDNN's team to one, e.g. inside a
/// parallel loop under omp_threads_scope(1)): C = alpha · op(A) · op(B) + beta · C, row-major.
/// False when oneDNN refuses.
bool sgemm_single(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc);

/// `batch` products C_i = op(A_i) · op(B_i) of the same shape, items `stride_a`, `stride_b` and
/// `stride_c` floats apart, one single-threaded SGEMM each, spread over up to `threads` threads.
void sgemm_batch(bool transpose_a, bool transpose_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                 const float* a, int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b,
                 float* c, int64_t ldc, int64_t stride_c, int threads);

}  // namespace petra::cpu

// OpenMP helpers: a loop runs on the backend's threads only when it is big enough
// to pay for waking them, and libraries (oneDNN, Eigen) see the backend's count.
#pragma once

#include <omp.h>

#include <cstdint>

namespace petra::cpu {

/// Elements below which an elementwise loop stays on the calling thread.
constexpr int64_t parallel_grain = 1 << 14;

/// Team size for a loop over `work` elements.
inline int team_for(int64_t work, int threads) { return work >= parallel_grain ? threads : 1; }

/// oneDNN and Eigen size their teams by omp_get_max_threads() of the calling
/// thread; this sets it to the backend's count for one call and restores it.
class omp_threads_scope {
 public:
  explicit omp_threads_scope(int threads) : previous_(omp_get_max_threads()) {
    if (previous_ != threads) omp_set_num_threads(threads);
  }
  ~omp_threads_scope() {
    if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
  }
  omp_threads_scope(const omp_threads_scope&) = delete;
  omp_threads_scope& operator=(const omp_threads_scope&) = delete;

 private:
  int previous_;
};

}  // namespace petra::cpu

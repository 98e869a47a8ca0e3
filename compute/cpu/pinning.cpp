// Thread pinning with pthread affinity, inside one OpenMP region so each team thread pins itself.
#include "compute/cpu/pinning.hpp"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstring>

namespace petra::cpu {

bool pin_compute_team(const std::vector<int>& cores, std::string* why) {
  if (cores.empty()) return true;
  const int n = static_cast<int>(cores.size());
  std::atomic<int> refused{-1};
  std::atomic<int> error{0};
  const auto pin = [&](int i) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cores[static_cast<std::size_t>(i)], &set);
    const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) {
      refused.store(cores[static_cast<std::size_t>(i)]);
      error.store(rc);
    }
  };
  pin(0);  // the caller first: team threads started below inherit its mask until they pin themselves
#pragma omp parallel num_threads(n)
  {
    if (omp_get_thread_num() != 0) pin(omp_get_thread_num());
  }
  if (refused.load() < 0) return true;
  if (why)
    *why = "core " + std::to_string(refused.load()) + " refused: " + std::strerror(error.load()) +
           " (not in this process's CPU affinity mask?)";
  return false;
}

std::vector<int> team_cores(int threads) {
  std::vector<int> out(static_cast<std::size_t>(threads), -1);
#pragma omp parallel num_threads(threads)
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 && CPU_COUNT(&set) == 1)
      for (int core = 0; core < CPU_SETSIZE; ++core)
        if (CPU_ISSET(core, &set)) out[static_cast<std::size_t>(omp_get_thread_num())] = core;
  }
  return out;
}

}  // namespace petra::cpu

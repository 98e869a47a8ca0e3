// The CPU backend's host blocks: aligned_alloc and free.
#include "compute/cpu/host_pool.hpp"

#include <cstdlib>
#include <new>

namespace petra {

void* host_memory::allocate(std::size_t bytes) {
  void* block = std::aligned_alloc(64, bytes);  // bytes is a multiple of the page size
  if (!block) throw std::bad_alloc();
  return block;
}

void host_memory::release(void* block, std::size_t) { std::free(block); }

}  // namespace petra

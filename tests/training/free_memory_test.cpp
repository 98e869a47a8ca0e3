// The heap's free pages go back to the system after a recovery (training/free_memory.hpp).
#include "training/free_memory.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "tests/skip.hpp"

TEST_CASE("return_free_memory hands 64 MB of freed small blocks back to the system") {
#if !defined(__GLIBC__)
  PETRA_SKIP("this C library has no malloc_trim");
#endif
  // 1,024 blocks of 64 KB (below the allocator's mmap threshold: they live in the heap), touched;
  // every 16th stays in use and the others are freed (as a recovery frees state between live
  // state): the heap cannot shrink past the live blocks, so the freed pages stay with the allocator
  // until they are handed back.
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(1024);
  for (int i = 0; i < 1024; ++i) {
    blocks.emplace_back(new char[65536]);
    for (int k = 0; k < 65536; k += 4096) blocks.back()[k] = static_cast<char>(i + k);
  }
  for (int i = 0; i < 1024; ++i)
    if (i % 16 != 15) blocks[i].reset();
  CHECK(petra::training::return_free_memory());
}

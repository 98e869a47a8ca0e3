// Host tensors for a GPU consumer are pinned (the GPU uploads them in place, asynchronously), made
// from several threads at once, and their blocks are reused; other consumers get plain memory.
#include <doctest/doctest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "compute/backend_factory.hpp"
#include "compute/cuda/cuda_backend.hpp"
#include "compute/cuda/pinned_pool.hpp"
#include "tests/skip.hpp"

using namespace petra;

TEST_CASE("host tensors for cuda:0 are pinned, made on many threads at once, for cpu they are not") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  const host_tensor_maker pinned = host_tensors_for(device::parse("cuda:0"), std::size_t{64} << 20);
  const host_tensor_maker plain = host_tensors_for(device::parse("cpu"), std::size_t{64} << 20);
  CHECK_FALSE(cuda::is_pinned(plain({4, 3, 8, 8})));
  std::mutex mutex;
  std::vector<tensor> made;
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < 8; ++i) {
        tensor t = pinned({16, 3, 32, 32});
        for (int64_t k = 0; k < t.numel(); ++k) t.data()[k] = static_cast<float>(w);
        std::lock_guard<std::mutex> lock(mutex);
        made.push_back(t);
      }
    });
  for (std::thread& t : threads) t.join();
  REQUIRE(made.size() == 32);
  for (const tensor& t : made) {
    CHECK(cuda::is_pinned(t));
    CHECK(t.where() == device{});
    CHECK(t.shape() == shape_t{16, 3, 32, 32});
  }
  for (std::size_t a = 0; a < made.size(); ++a)
    for (std::size_t b = a + 1; b < made.size(); ++b) CHECK_FALSE(made[a].shares_storage_with(made[b]));
  // A freed block comes back for the next tensor of its size.
  const void* first = made.front().data();
  made.clear();
  bool reused = false;
  std::vector<tensor> again;
  for (int i = 0; i < 32; ++i) {
    again.push_back(pinned({16, 3, 32, 32}));
    reused = reused || again.back().data() == first;
  }
  CHECK(reused);
}

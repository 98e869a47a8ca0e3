// backend::gaussian, the random guesses' draw: counter-based, so the CPU's threads may split the
// pairs any way and a simulated device draws on the host, and all give the same bits as the
// reference loop of compute/gaussian.hpp; a draw is a prefix of any longer one of its stream.
#include "compute/gaussian.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>

#include "compute/backend_factory.hpp"
#include "compute/sim/sim_devices.hpp"

using namespace petra;

namespace {

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

}  // namespace

TEST_CASE("gaussian: the reference's bits on 1 and 4 CPU threads and on a sim device, odd counts included") {
  const uint64_t key = 0x1234567890abcdefULL;
  const shape_t shape{3, 5, 7, 9};  // 945 values: the last pair gives one
  tensor reference = tensor::empty(shape);
  fill_gaussian(reference.data(), reference.numel(), key);
  auto one = make_cpu_backend(1);
  auto four = make_cpu_backend(4);
  CHECK(same_bits(one->gaussian(shape, key), reference));
  // Large enough for the 4 threads to split it (the grain is 2^14 elements).
  const shape_t large{64, 16, 28, 28};
  const tensor on_one = one->gaussian(large, key);
  CHECK(same_bits(four->gaussian(large, key), on_one));
  backend_options o;
  o.sim = std::make_shared<sim_devices>();
  auto sim = make_backend(device{device_type::sim, 0}, o);
  const tensor on_sim = sim->gaussian(shape, key);
  CHECK(on_sim.where().type == device_type::sim);
  CHECK(same_bits(sim->to_host(on_sim), reference));
  // Counter-based: the first 945 values of a longer draw are these.
  const tensor longer = one->gaussian({2000}, key);
  CHECK(std::memcmp(longer.data(), reference.data(), reference.bytes()) == 0);
  CHECK_FALSE(same_bits(one->gaussian(shape, key + 1), reference));
  CHECK(one->gaussian({0}, key).numel() == 0);
  CHECK_THROWS_WITH_AS(one->gaussian({2, -1}, key), doctest::Contains("dimension 1 of the shape is -1"),
                       std::invalid_argument);
}

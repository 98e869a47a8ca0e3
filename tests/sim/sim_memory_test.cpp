// What the op table (tests/backends, every op on sim against the CPU bit for bit) does not ask of
// every backend: a sim tensor is of its device, and a copy between shapes is refused.
#include <doctest/doctest.h>

#include <stdexcept>

#include "tests/sim/sim_fixture.hpp"

using namespace petra;
using namespace petra::testing;
using petra::test::random_tensor;

TEST_CASE("sim memory: from_host takes the values at the call, empty is of the device, copy checks shapes") {
  std::mt19937 rng(5);
  const tensor a = random_tensor({3, 4}, rng);
  sim_run run;
  auto sim = run.make(0);
  tensor host = a.clone();
  const tensor on_sim = sim->from_host(host);
  host.data()[0] = 42.f;  // after the call: not seen by the device copy
  CHECK(bit_equal(sim->to_host(on_sim), a));
  CHECK(sim->empty({2, 3}).where() == device{device_type::sim, 0});
  tensor wrong = sim->zeros({4, 3});
  CHECK_THROWS_WITH_AS(sim->copy(on_sim, wrong), doctest::Contains("must have the same shape"),
                       std::invalid_argument);
}

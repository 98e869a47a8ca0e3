// The draws of the faults injected where messages arrive (forward gradients' derivatives): a
// function of the seed and the keys alone, uniform on [0, 1), independent across the keys.
#include <doctest/doctest.h>

#include <set>

#include "training/faults.hpp"

using namespace petra;

TEST_CASE(
    "a fault draw depends on the seed, stage, micro-batch and fault alone, and is uniform between 0 and 1") {
  CHECK(fault_draw(7, 2, 40, 1) == fault_draw(7, 2, 40, 1));
  std::set<double> keyed{fault_draw(7, 2, 40, 1), fault_draw(8, 2, 40, 1), fault_draw(7, 3, 40, 1),
                         fault_draw(7, 2, 41, 1), fault_draw(7, 2, 40, 2)};
  CHECK(keyed.size() == 5);  // each key changes the draw
  double sum = 0;
  int below_tenth = 0;
  const int n = 20000;
  for (int id = 0; id < n; ++id) {
    const double u = fault_draw(1, id % 8, id, 1);
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    below_tenth += u < 0.1;
  }
  CHECK(sum / n == doctest::Approx(0.5).epsilon(0.02));
  CHECK(below_tenth == doctest::Approx(n / 10).epsilon(0.05));  // faults.drop = 0.1 drops about a tenth
}

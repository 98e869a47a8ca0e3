// Learning-rate schedule and Goyal scaling.
#include "compute/optimizer.hpp"

#include <doctest/doctest.h>

using namespace petra;

TEST_CASE("Goyal scaling: base 0.1, micro-batch 64 gives 0.025 k") {
  CHECK(goyal_lr(0.1, 64, 1) == doctest::Approx(0.025));
  CHECK(goyal_lr(0.1, 64, 2) == doctest::Approx(0.05));
  CHECK(goyal_lr(0.1, 64, 32) == doctest::Approx(0.8));
}

TEST_CASE("linear warm-up, then cosine to 0") {
  optimizer_settings s;
  s.lr = 0.05;
  s.warmup_steps = 10;
  s.total_steps = 110;
  s.schedule = schedule_kind::cosine;
  CHECK(learning_rate(s, 0) == doctest::Approx(0.005));
  CHECK(learning_rate(s, 9) == doctest::Approx(0.05));
  CHECK(learning_rate(s, 10) == doctest::Approx(0.05));
  CHECK(learning_rate(s, 60) == doctest::Approx(0.025));
  CHECK(learning_rate(s, 110) == doctest::Approx(0.0));
  for (int64_t i = 11; i <= 110; ++i) CHECK(learning_rate(s, i) <= learning_rate(s, i - 1));
}

TEST_CASE("step schedule multiplies by gamma at each milestone") {
  optimizer_settings s;
  s.lr = 0.1;
  s.schedule = schedule_kind::step;
  s.milestones = {150, 225};
  CHECK(learning_rate(s, 149) == doctest::Approx(0.1));
  CHECK(learning_rate(s, 150) == doctest::Approx(0.01));
  CHECK(learning_rate(s, 225) == doctest::Approx(0.001));
}

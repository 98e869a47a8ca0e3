// The pipeline's balance of an epoch: the rate its busiest stage allows, and where the CPU stages
// take turns on fewer cores than their threads, the rate the cores allow.
#include "training/pipeline_balance.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace petra;

namespace {

std::vector<stage_record> stages_busy(const std::vector<double>& seconds) {
  std::vector<stage_record> out;
  for (std::size_t j = 0; j < seconds.size(); ++j) {
    stage_record r;
    r.stage = static_cast<int>(j + 1);
    r.busy_seconds = seconds[j];
    r.busy_fraction = seconds[j] / 4;
    out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("the ideal rate is the busiest stage's, and the efficiency the measured rate's share of it") {
  const auto b = balance_of(stages_busy({1, 2, 0.5}), 100, 40);
  REQUIRE(b);
  CHECK(b->busiest_stage == 2);
  CHECK(b->busiest_fraction == doctest::Approx(0.5));
  CHECK(b->ideal_images_per_s == doctest::Approx(50));
  CHECK(b->efficiency == doctest::Approx(0.8));
  CHECK(b->compute_over_busiest == doctest::Approx(1.75));
  CHECK(b->cores == 0);
  CHECK(
      balance_text(*b) ==
      "pipeline: busiest stage 2 (busy 50 %): ideal 50 img/s, efficiency 80 %; the stages' compute is 1.8 × "
      "the busiest's");
  CHECK_FALSE(balance_of(stages_busy({0, 0}), 100, 40));  // simulate measures no busy time
  CHECK_FALSE(balance_of(stages_busy({1, 2}), 0, 0));
}

TEST_CASE("CPU stages taking turns on fewer cores: the rate the cores allow, beside the busiest stage's") {
  // Eight one-thread stages of 1 s each on 2 cores: the cores need 4 s for what the busiest does in 1.
  const auto b = balance_of(stages_busy(std::vector<double>(8, 1.0)), 400, 98, {std::vector<int>(8, 1), 2});
  REQUIRE(b);
  CHECK(b->ideal_images_per_s == doctest::Approx(400));
  CHECK(b->efficiency == doctest::Approx(0.245));
  CHECK(b->cpu_stages == 8);
  CHECK(b->cores == 2);
  CHECK(b->cores_ideal_images_per_s == doctest::Approx(100));
  CHECK(b->cores_efficiency == doctest::Approx(0.98));
  CHECK(balance_text(*b).find("; 8 CPU stages on 2 cores: their compute allows 100 img/s, efficiency 98 %") !=
        std::string::npos);
  // Threads count: two 2-thread stages of 1 s on 2 cores need 2 s.
  const auto two = balance_of(stages_busy({1, 1}), 100, 50, {{2, 2}, 2});
  REQUIRE(two);
  CHECK(two->cores_ideal_images_per_s == doctest::Approx(50));
}

TEST_CASE("the cores are left out where they do not bind, and stages elsewhere do not count") {
  // 8 stages × 2 threads on 16 cores: each owns its cores.
  const auto owned =
      balance_of(stages_busy({1, 2, 1, 1, 1, 1, 1, 0.5}), 100, 45, {std::vector<int>(8, 2), 16});
  REQUIRE(owned);
  CHECK(owned->cores == 0);
  CHECK(owned->cpu_stages == 0);
  CHECK(balance_text(*owned).find("cores") == std::string::npos);
  // A GPU stage (0 threads here) busy 3 s beside two CPU stages of 1 s on one core: the cores need
  // 2 s, less than the busiest stage's 3.
  const auto mixed = balance_of(stages_busy({1, 3, 1}), 100, 30, {{1, 0, 1}, 1});
  REQUIRE(mixed);
  CHECK(mixed->cores == 0);
  CHECK(mixed->ideal_images_per_s == doctest::Approx(100.0 / 3));
  // The same CPU stages on one core with a light GPU stage: the cores bind, counting the CPU stages only.
  const auto bound = balance_of(stages_busy({1, 0.5, 1}), 100, 40, {{1, 0, 1}, 1});
  REQUIRE(bound);
  CHECK(bound->cpu_stages == 2);
  CHECK(bound->cores_ideal_images_per_s == doctest::Approx(50));
}

// The cut by measured cost: the smallest busiest stage any cut into J consecutive stages has, a
// function of the recorded costs alone; the blocks measured as a stage computes them.
#include "training/cost_partition.hpp"

#include <doctest/doctest.h>

#include <numeric>

#include "config/config.hpp"
#include "training/setup.hpp"
#include "training/stage_threads.hpp"

using namespace petra;

namespace {

double busiest(const std::vector<double>& costs, const std::vector<int>& sizes) {
  double most = 0;
  std::size_t b = 0;
  for (int n : sizes) {
    double sum = 0;
    for (int k = 0; k < n; ++k) sum += costs[b++];
    most = std::max(most, sum);
  }
  return most;
}

/// The smallest busiest stage over every cut of `costs` into `stages` groups (all of them, tried).
double best_by_search(const std::vector<double>& costs, int stages, std::size_t from = 0) {
  if (stages == 1) return std::accumulate(costs.begin() + static_cast<long>(from), costs.end(), 0.0);
  double best = 1e300, first = 0;
  for (std::size_t end = from + 1; costs.size() - end >= static_cast<std::size_t>(stages - 1); ++end) {
    first += costs[end - 1];
    best = std::min(best, std::max(first, best_by_search(costs, stages - 1, end)));
  }
  return best;
}

}  // namespace

TEST_CASE("a cut by cost makes the busiest stage as light as any cut can") {
  // RevNet-like: a light stem and head, couplings that grow heavier group by group.
  const std::vector<double> costs = {0.4, 1.0, 1.0, 2.1, 1.9, 3.2, 3.0, 0.2};
  for (int J = 1; J <= 8; ++J) {
    CAPTURE(J);
    const std::vector<int> sizes = partition_by_cost(costs, J);
    REQUIRE(sizes.size() == static_cast<std::size_t>(J));
    CHECK(std::accumulate(sizes.begin(), sizes.end(), 0) == 8);
    for (int n : sizes) CHECK(n >= 1);
    CHECK(busiest(costs, sizes) == doctest::Approx(best_by_search(costs, J)));
  }
  CHECK(partition_by_cost(costs, 4) == std::vector<int>{3, 2, 1, 2});  // 2.4, 4.0, 3.2, 3.2
  // The same costs, the same cut; equal costs, equal shares.
  CHECK(partition_by_cost(costs, 3) == partition_by_cost(costs, 3));
  CHECK(partition_by_cost(std::vector<double>(8, 1.0), 4) == std::vector<int>{2, 2, 2, 2});
  CHECK_THROWS_AS(partition_by_cost(costs, 9), std::invalid_argument);
  CHECK_THROWS_AS(partition_by_cost(costs, 0), std::invalid_argument);
}

TEST_CASE("a cut by cost with the last stage's own costs: its blocks run no rebuild there") {
  // Four equal blocks that cost half in the last stage: 1 + 3 × 0.5 beats 2 + 2 × 0.5.
  const std::vector<double> costs(4, 1.0), last(4, 0.5);
  CHECK(partition_by_cost(costs, 2) == std::vector<int>{2, 2});
  CHECK(partition_by_cost(costs, 2, last) == std::vector<int>{1, 3});
  CHECK(partition_by_cost(costs, 1, last) == std::vector<int>{4});
  CHECK(partition_by_cost(costs, 4, last) == std::vector<int>{1, 1, 1, 1});
  // The same as an exhaustive search over cuts, the last group summed from `last`.
  const std::vector<double> revnet = {0.4, 1.0, 1.0, 2.1, 1.9, 3.2, 3.0, 0.2};
  const std::vector<double> revnet_last = {0.3, 0.7, 0.7, 1.4, 1.3, 2.1, 2.0, 0.2};
  for (int J = 1; J <= 8; ++J) {
    CAPTURE(J);
    const std::vector<int> sizes = partition_by_cost(revnet, J, revnet_last);
    REQUIRE(sizes.size() == static_cast<std::size_t>(J));
    double worst = 0;
    std::size_t b = 0;
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      double sum = 0;
      for (int k = 0; k < sizes[j]; ++k, ++b) sum += (j + 1 == sizes.size() ? revnet_last : revnet)[b];
      worst = std::max(worst, sum);
    }
    // Every cut: its first J−1 groups from `revnet`, its last from `revnet_last`.
    double best = 1e300;
    for (std::size_t start = static_cast<std::size_t>(J - 1); start < (J == 1 ? 1 : revnet.size()); ++start) {
      const std::vector<double> head(revnet.begin(), revnet.begin() + static_cast<long>(start));
      const double tail =
          std::accumulate(revnet_last.begin() + static_cast<long>(start), revnet_last.end(), 0.0);
      best = std::min(best, std::max(J == 1 ? 0.0 : best_by_search(head, J - 1, 0), tail));
    }
    CHECK(worst == doctest::Approx(best));
  }
  CHECK_THROWS_AS(partition_by_cost(costs, 2, {1.0}), std::invalid_argument);
}

TEST_CASE(
    "pipeline.stages: the model's blocks measured, cut into that many stages, recorded as stage_blocks") {
  config::run_config c = config::load_config("ci_smoke", {"pipeline.stages=2", "training.micro_batch=4"});
  const block_costs measured = measure_block_costs(c, 1, 2, 2);
  const std::vector<double>& costs = measured.seconds;
  REQUIRE(costs.size() == stage_sizes(config::load_config("ci_smoke")).size());
  REQUIRE(measured.last_seconds.size() == costs.size());
  for (std::size_t b = 0; b < costs.size(); ++b) {
    CHECK(costs[b] > 0);
    // PETRA's last stage tapes its forward: a block there costs less, the head (measured last) the same.
    CHECK(measured.last_seconds[b] >= 0.25 * costs[b]);
    if (b + 1 < costs.size())
      CHECK(measured.last_seconds[b] < costs[b]);
    else
      CHECK(measured.last_seconds[b] == costs[b]);
  }
  // Backprop tapes every stage: its blocks cost the same in the last one.
  config::run_config bp = config::load_config(
      "ci_smoke", {"pipeline.stages=2", "training.micro_batch=4", "training.method=backprop"});
  const block_costs backprop = measure_block_costs(bp, 1, 1, 1);
  CHECK(backprop.last_seconds == backprop.seconds);
  const std::vector<std::string> lines = resolve_measured_partition(c);
  REQUIRE(lines.size() >= 2);  // a third when there are cores to split (the next case)
  CHECK(lines[0].find("pipeline.stages 2: blocks per stage [") == 0);
  CHECK(c.pipeline.stages == 0);
  REQUIRE(c.pipeline.stage_blocks.size() == 2);
  CHECK(std::accumulate(c.pipeline.stage_blocks.begin(), c.pipeline.stage_blocks.end(), 0) ==
        static_cast<int>(costs.size()));
  CHECK(resolve_measured_partition(c).empty());  // resolved once: a resumed run keeps its cut
}

TEST_CASE("the cores split over the stages by cost: every further core to the stage predicted slowest") {
  // Measured on 2 threads each: 1 ms and 3 ms; on 4 cores the heavy stage takes 3 (2 ms vs 2 ms).
  CHECK(split_cores_by_cost({1.0, 3.0}, 4, 2) == std::vector<int>{1, 3});
  // Equal costs, equal shares; on a tie the earlier stage first.
  CHECK(split_cores_by_cost(std::vector<double>(8, 1.0), 16, 2) == std::vector<int>(8, 2));
  CHECK(split_cores_by_cost({1.0, 1.0}, 3, 1) == std::vector<int>{2, 1});
  // Fewer cores than stages: one each (they take turns); none: nothing.
  CHECK(split_cores_by_cost({1.0, 5.0, 1.0}, 2, 1) == std::vector<int>{1, 1, 1});
  CHECK(split_cores_by_cost({}, 4, 1).empty());
  // The 8 stages of the default preset as measured at 8 × 2 on 16 cores (busy seconds of an epoch):
  // the light head keeps 1 thread, the heavy middle stages take the rest; all 16 used.
  const std::vector<double> busy = {0.98, 2.28, 2.14, 1.83, 1.52, 1.41, 1.11, 0.10};
  const std::vector<int> split = split_cores_by_cost(busy, 16, 2);
  CHECK(std::accumulate(split.begin(), split.end(), 0) == 16);
  CHECK(split == std::vector<int>{1, 3, 3, 2, 2, 2, 2, 1});
  double slowest = 0;
  for (std::size_t j = 0; j < busy.size(); ++j) slowest = std::max(slowest, busy[j] * 2 / split[j]);
  CHECK(slowest == doctest::Approx(1.96));  // stage 1 on 1 thread; the even split's slowest is 2.28
}

TEST_CASE("pipeline.stages with pipeline.threads empty: the cores split over the cut by cost, recorded") {
  // The split as a function of the cores: more cores than CPU stages split them; fewer leave the
  // default (the stages take turns).
  const std::vector<std::string> extra = {"pipeline.stages=2", "training.micro_batch=4"};
  config::run_config c = config::load_config("ci_smoke", extra);
  const std::vector<std::string> lines = resolve_measured_partition(c);
  const int cores = usable_cores();
  if (cores > 2) {
    REQUIRE(lines.size() == 3);
    CHECK(lines[2].find("  compute threads by the same costs: pipeline.threads [") == 0);
    REQUIRE(c.pipeline.threads.size() == 2);
    CHECK(c.pipeline.threads[0] + c.pipeline.threads[1] == cores);
  } else {
    CHECK(lines.size() == 2);
    CHECK(c.pipeline.threads.empty());
  }
  // Threads given are kept.
  config::run_config given = config::load_config(
      "ci_smoke", {"pipeline.stages=2", "training.micro_batch=4", "pipeline.threads=[1,1]"});
  CHECK(resolve_measured_partition(given).size() == 2);
  CHECK(given.pipeline.threads == std::vector<int>{1, 1});
  // A stage on a simulated device gets 1 and is not counted: the other takes every core.
  config::run_config mixed = config::load_config(
      "ci_smoke", {"pipeline.stages=2", "training.micro_batch=4", "pipeline.devices=[cpu, sim:0]"});
  const std::vector<std::string> mixed_lines = resolve_measured_partition(mixed);
  if (cores > 1) {
    REQUIRE(mixed_lines.size() == 3);
    CHECK(mixed.pipeline.threads == std::vector<int>{cores, 1});
  } else {
    CHECK(mixed.pipeline.threads.empty());
  }
}

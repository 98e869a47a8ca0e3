// The memory model's fallback bytes: what a rebuilding stage holds more while it keeps its inputs is
// what the stage measures, at every stage that rebuilds (none at one that keeps its inputs anyway).
#include <doctest/doctest.h>

#include "tests/training/pipeline_fixture.hpp"
#include "training/memory_model.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

constexpr int sample_every = 2;

/// The fixture's pipeline (J = 6) with every rebuilding stage falling back when its error passes
/// `max_error` (tiny: from its first window of samples on, and for good); the FIFO byte peaks of a
/// run of 60 micro-batches, long enough for a stage keeping inputs to hold its whole window.
std::vector<int64_t> fifo_peaks(double max_error, int k) {
  std::unique_ptr<backend> be = make_cpu_backend(1);
  optimizer_settings o;
  o.lr = 0.05;
  o.accumulation = k;
  o.schedule = schedule_kind::constant;
  const method_options m = method_of(method_kind::petra);
  auto blocks = build_revnet(small_spec(), *be, 3);
  auto groups = partition_blocks(std::move(blocks), resolve_partition({}, blocks.size()));
  std::vector<std::unique_ptr<stage>> stages;
  std::vector<stage*> order;
  for (std::size_t j = 0; j < groups.size(); ++j) {
    stage_options options = m.for_stage(sample_every, j + 1 == groups.size());
    options.max_inversion_error = max_error;
    stages.push_back(std::make_unique<stage>(static_cast<int>(j), std::move(groups[j]), *be, o, options));
    order.push_back(stages.back().get());
  }
  simulator sim(order, *be, 1);
  std::mt19937 rng(9);
  int64_t next_id = 0;
  sim.run([&](micro_batch& mb) {
    if (next_id >= 60) return false;
    mb.id = next_id++;
    mb.images = activation{random_tensor({4, 1, 8, 8}, rng), {}};
    mb.labels.assign(4, static_cast<int32_t>(rng() % 10));
    return true;
  });
  std::vector<int64_t> out;
  for (auto& s : stages) out.push_back(static_cast<int64_t>(s->stats().fifo_peak_bytes));
  return out;
}

}  // namespace

TEST_CASE("memory model: a stage falling back holds fallback_stage_bytes more, as it measures") {
  for (const int k : {1, 2}) {
    INFO("k = " << k);
    const std::vector<int64_t> rebuilding = fifo_peaks(0, k), keeping = fifo_peaks(1e-12, k);
    // Profiles from an identically built model.
    auto blocks = build_revnet(small_spec(), *make_cpu_backend(1), 3);
    auto groups = partition_blocks(std::move(blocks), resolve_partition({}, blocks.size()));
    const auto profiles = profile_stages(groups, {{4, 1, 8, 8}, {}});
    const std::size_t J = profiles.size();
    int rebuilt = 0;
    for (std::size_t j = 0; j < J; ++j) {
      INFO("stage " << j + 1);
      const int64_t more = fallback_stage_bytes(profiles[j], j, J, k, sample_every);
      CHECK(keeping[j] - rebuilding[j] == more);
      if (profiles[j].reversible && j + 1 < J) {  // the last stage's one input is sampled as it is kept
        CHECK(more > 0);
        ++rebuilt;
      }
      if (!profiles[j].reversible) CHECK(more == 0);
    }
    CHECK(rebuilt >= 2);
  }
}

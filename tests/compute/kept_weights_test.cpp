// A CPU backend keeps its converted weights (bf16 or blocked copies) between ops; weights written by
// an optimizer step or a snapshot restore must be what the next op reads: every forward equals, bit
// for bit, that of a fresh backend given the same state.
#include <doctest/doctest.h>

#include "tests/compute/kept_weights_fixture.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("kept converted weights: forward, backward and optimizer step, forward again = a fresh backend") {
  for (const math_precision precision : converting_precisions()) {
    CAPTURE(to_string(precision));
    model_stage run(precision);
    std::vector<float> previous;
    for (int64_t id = 0; id < 3; ++id) {
      CAPTURE(id);
      const stage_snapshot before = snapshot_stage(*run.whole, *run.be);
      const std::vector<float> logits = run.forward(id);
      CHECK(logits == logits_on_fresh_backend(precision, before));
      CHECK(logits != previous);  // the step moved the weights: a stale copy would not show them
      previous = logits;
      run.backward(id);
    }
  }
}

TEST_CASE("kept converted weights: a restore from a snapshot is what the next forward reads") {
  for (const math_precision precision : converting_precisions()) {
    CAPTURE(to_string(precision));
    model_stage run(precision);
    const stage_snapshot at_start = snapshot_stage(*run.whole, *run.be);
    const std::vector<float> first = run.forward(0);
    run.backward(0);
    const std::vector<float> second = run.forward(1);  // the stepped weights are converted now
    run.backward(1);
    REQUIRE(second != first);
    restore_stage(*run.whole, *run.be, at_start);
    CHECK(run.forward(2) == first);
  }
}

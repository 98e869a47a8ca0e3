// Weights loaded from a checkpoint file are what the next op reads on a CPU backend that keeps
// converted weights between ops (compute/cpu/weight_cache.hpp): the same logits, bit for bit, as a
// fresh backend given the state the checkpoint holds.
#include <doctest/doctest.h>

#include "tests/compute/kept_weights_fixture.hpp"
#include "tests/scratch_dir.hpp"
#include "training/checkpoint.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("kept converted weights: a checkpoint loaded into a trained stage is what its next forward reads") {
  for (const math_precision precision : converting_precisions()) {
    CAPTURE(to_string(precision));
    scratch_dir dir;
    const std::string path = (dir.path / "start.safetensors").string();
    model_stage run(precision);
    const stage_snapshot at_start = snapshot_stage(*run.whole, *run.be);
    write_checkpoint(path, {at_start}, {});
    const std::vector<float> first = run.forward(0);
    run.backward(0);
    REQUIRE(run.forward(1) != first);  // the stepped weights are converted now
    run.backward(1);
    const checkpoint loaded = read_checkpoint(path, 1);
    restore_stage(*run.whole, *run.be, loaded.stages.at(0));
    const std::vector<float> after_load = run.forward(2);
    CHECK(after_load == first);
    CHECK(after_load == logits_on_fresh_backend(precision, loaded.stages.at(0)));
  }
}

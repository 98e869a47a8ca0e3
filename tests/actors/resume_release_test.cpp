// A phase resumed from a cut keeps none of the cut's tensors once the stages have their parts:
// in async the whole run is one phase, and a rollback's snapshot held to its end cost the
// snapshot's size in memory for the rest of the run (the default preset's soak: +170 MB per
// rollback at micro-batches of 64).
#include <memory>

#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("a phase resumed from a cut lets the cut go once the stages have their parts (lockstep, async)") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* mode : {"lockstep", "async"}) {
    CAPTURE(mode);
    config::run_config c = tiny_config(mode, "petra");
    training_data data = load_training_data(c);
    const int64_t per_epoch = data.train_feed->micro_batches_per_epoch();
    const optimizer_settings opt = optimizer_for(c.training, per_epoch / c.training.accumulation);
    std::unique_ptr<pipeline_runtime> t = make_runtime(c, data, opt);
    REQUIRE(t->takes_cuts());

    // A first attempt that cuts the pipeline halfway; the cut is kept as a rollback keeps it.
    std::shared_ptr<const pipeline_cut> cut;
    phase_request first = phase_request::of(1, 0, per_epoch);
    first.cut_before = {per_epoch / 2};
    t->train(first, {}, {},
             [&](int64_t, const pipeline_cut& taken) { cut = std::make_shared<const pipeline_cut>(taken); });
    REQUIRE(cut != nullptr);
    REQUIRE_FALSE(cut->stages.empty());
    const std::weak_ptr<const pipeline_cut> watched = cut;

    // The replay from it, handed the only reference: by the epoch's end nobody holds the cut.
    t->recover();
    phase_request replay = phase_request::of(1, 0, per_epoch);
    replay.attempt = 1;
    replay.resume = std::move(cut);
    bool released_before_end = false;
    int epochs = 0;
    const phase_result r = t->train(std::move(replay), {}, [&](const epoch_result&) {
      ++epochs;
      released_before_end = watched.expired();
    });
    CHECK(epochs == 1);
    CHECK(released_before_end);  // before: the request held it until train() returned
    CHECK(r.micro_batches > 0);
    CHECK(watched.expired());
  }
}

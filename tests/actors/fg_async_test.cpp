// Forward gradients in the async runtime: the loss falls from one epoch to the next, every
// micro-batch passes every stage's forward and backward once, and upstream only the derivatives
// come back.
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("async forward_gradient: the loss falls, and every micro-batch is accounted for at every stage") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* target : {"global", "local"}) {
    INFO("target ", target);
    config::run_config c = tiny_config("async", "forward_gradient", 1024);
    c.training.forward_gradient.target = config::parse_choice<config::gradient_target>(target);
    c.training.forward_gradient.aux_width = 8;
    c.training.epochs = 2;
    c.training.optimizer.base_lr = 0.8;  // lr 0.05 at micro-batch 8, k = 2
    c.runtime.inversion_sample_every = 0;
    training_data data = load_training_data(c);
    const int64_t count = data.train_feed->micro_batches_per_epoch();
    REQUIRE(count == 1024 / c.training.micro_batch);
    const optimizer_settings opt = optimizer_for(c.training, count / c.training.accumulation);
    std::unique_ptr<pipeline_runtime> runtime = make_runtime(c, data, opt);
    std::vector<phase_result> epochs;
    for (int epoch = 1; epoch <= 2; ++epoch) {
      epochs.push_back(runtime->train(phase_request::of(epoch, 0, count), {}));
      const phase_result& e = epochs.back();
      CHECK(e.micro_batches == count);
      REQUIRE(e.epochs.size() == 1);
      const std::vector<stage_report>& stages = e.epochs.back().stages;
      const std::size_t J = stages.size();
      for (std::size_t j = 0; j < J; ++j) {
        CAPTURE(j);
        CHECK(stages[j].stats.forwards == count);
        CHECK(stages[j].stats.backwards == count);
        const bool home = target == std::string("global") && j + 1 < J;  // derivatives come back
        CHECK(stages[j].upstream_messages == (home ? count : 0));
        CHECK(stages[j].stats.fifo_peak <= 2 * J - 1);  // the credits bound what is in flight
      }
    }
    // Chance is ln 10 = 2.303: the first epoch learns already, the second further.
    CHECK(epochs[0].mean_loss() < 2.25);
    CHECK(epochs[1].mean_loss() < epochs[0].mean_loss());
  }
}

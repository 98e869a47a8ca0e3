// Stages in two OS processes (a `petra node` on 127.0.0.1): the same run, bit for bit; a node
// killed mid-run ends the run with an error naming the stage.
#include <chrono>
#include <thread>

#include "app/commands.hpp"
#include "tests/actors/node_process.hpp"
#include "tests/actors/runtime_fixture.hpp"
#include "training/shutdown_watch.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("lockstep across two processes is bit-identical to one process") {
  PETRA_REQUIRE_FASHION_MNIST();
  node_process node;
  const trained one = train_once(tiny_config("lockstep", "petra"));
  config::run_config split = tiny_config("lockstep", "petra");
  split.pipeline.nodes = {"local", node.address(), node.address(), "local"};
  const trained two = train_once(split);
  CHECK(differing(one, two) == 0);
  CHECK(two.totals.loss_sum == one.totals.loss_sum);
  // The stamps crossed the process boundary too.
  CHECK(two.stages[1]["delay_ticks"].begin().key() == "4");
  // The node builds its stages with the coordinator's tick order.
  config::run_config bf_one = tiny_config("lockstep", "petra");
  bf_one.training.tick_order = config::tick_order::backward_first;
  config::run_config bf_split = bf_one;
  bf_split.pipeline.nodes = split.pipeline.nodes;
  const trained three = train_once(bf_one), four = train_once(bf_split);
  CHECK(differing(three, four) == 0);
  CHECK(differing(three, one) > 0);
  // Each teardown step was noted for the shutdown watch, the last one after the actor system was gone.
  CHECK(training::shutdown_watch::last_step() == "after the actor system's shutdown");
}

TEST_CASE("three node processes and a coordinator, lockstep: bit-identical to one process") {
  PETRA_REQUIRE_FASHION_MNIST();
  node_process a, b, c;
  const trained one = train_once(tiny_config("lockstep", "petra"));
  config::run_config spread = tiny_config("lockstep", "petra");
  spread.nodes["first"].address = a.address();  // stages placed by node name and by address
  spread.pipeline.nodes = {"first", b.address(), c.address(), "local"};
  const trained four = train_once(spread);
  CHECK(differing(one, four) == 0);
  CHECK(four.totals.loss_sum == one.totals.loss_sum);
  CHECK(four.totals.correct == one.totals.correct);
}

TEST_CASE("a node killed mid-run: the coordinator notices and the run fails, naming the stage") {
  PETRA_REQUIRE_FASHION_MNIST();
  node_process node;
  config::run_config c = tiny_config("async", "petra", 60000);
  c.pipeline.nodes = {"local", "local", node.address(), "local"};
  training_data data = load_training_data(c);
  const int64_t per_epoch = data.train_feed->micro_batches_per_epoch();
  c.faults.stall_seconds = 600;  // only the lost node can end this phase early
  auto t = make_actor_runtime(c, data, optimizer_for(c.training, per_epoch / 2));
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    node.kill_hard();
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::string message;
  failure_kind kind = failure_kind::stall;
  int32_t stage = -1;
  try {
    t->train(phase_request::of(1, 0, per_epoch), {});
  } catch (const run_failure& e) {
    message = e.what();
    kind = e.kind();
    stage = e.stage();
  }
  killer.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(kind == failure_kind::lost_actor);  // noticed from the lost connection, not by a timeout
  CHECK(stage == 2);
  CHECK(message.find("stage 3") != std::string::npos);
  MESSAGE("failure noticed after " << seconds << " s: " << message);
}

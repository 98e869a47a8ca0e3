// Forward gradients (training.method forward_gradient) in the lockstep runtime: bit for bit the
// simulator's, auxiliary heads included, in one process or two; and the only messages that travel
// upstream are the loss actor's vectors of directional derivatives, one float per sample.
#include <caf/binary_serializer.hpp>

#include "messages/serialization.hpp"
#include "tests/actors/node_process.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

struct variant {
  config::gradient_guess guess;
  config::gradient_target target;
  const char* name;
};

const variant variants[] = {
    {config::gradient_guess::local, config::gradient_target::global, "local guess, global target"},
    {config::gradient_guess::random, config::gradient_target::global, "random guess, global target"},
    {config::gradient_guess::local, config::gradient_target::local, "local guess, local target"},
    {config::gradient_guess::random, config::gradient_target::local, "random guess, local target"},
};

config::run_config fg_config(const std::string& mode, const variant& v, int64_t images = 256) {
  config::run_config c = tiny_config(mode, "forward_gradient", images);
  c.training.forward_gradient.guess = v.guess;
  c.training.forward_gradient.target = v.target;
  c.training.forward_gradient.aux_width = 8;
  return c;
}

/// Bytes of `msg` as it crosses a process boundary (CAF's binary encoding).
std::size_t wire_bytes(messages::derivatives_data msg) {
  std::vector<char> bytes;
  caf::binary_serializer sink{nullptr, bytes};
  REQUIRE(!sink(msg));
  return bytes.size();
}

}  // namespace

TEST_CASE("lockstep forward_gradient, J = 4: stage and auxiliary-head weights bit-identical to simulate") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const variant& v : variants) {
    INFO(v.name);
    const trained sim = train_once(fg_config("simulate", v));
    const trained actors = train_once(fg_config("lockstep", v));
    CHECK(differing(sim, actors) == 0);
    CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
    CHECK(actors.totals.micro_batches == sim.totals.micro_batches);
    int aux = 0;  // the heads are in the snapshot compared: with a local guess or target, J − 1 of them
    for (const auto& [name, value] : actors.weights) aux += name.rfind("aux/param/", 0) == 0;
    const bool heads = v.guess == config::gradient_guess::local || v.target == config::gradient_target::local;
    CHECK((aux > 0) == heads);
    for (std::size_t j = 0; j < sim.stages.size(); ++j) {
      CAPTURE(j);
      CHECK(actors.stages[j]["delay_ticks"] == sim.stages[j]["delay_ticks"]);
      CHECK(actors.stages[j]["expected_delay_ticks"] == sim.stages[j]["expected_delay_ticks"]);
      CHECK(actors.stages[j]["fifo_peak"] == sim.stages[j]["fifo_peak"]);
    }
  }
}

TEST_CASE(
    "lockstep forward_gradient: upstream, each stage j < J gets B floats per micro-batch, nothing else") {
  PETRA_REQUIRE_FASHION_MNIST();
  const config::run_config c = fg_config("lockstep", variants[0]);
  const trained t = train_once(c);
  const int64_t count = t.totals.micro_batches;
  const int64_t batch = c.training.micro_batch;
  REQUIRE(count == 256 / batch);
  REQUIRE(!t.totals.epochs.empty());
  const std::vector<stage_report>& stages = t.totals.epochs.back().stages;
  const std::size_t J = stages.size();
  REQUIRE(J == 4);
  // One message per micro-batch: its B floats and a header (stamp, stage, length) of a fixed size.
  const auto header = static_cast<int64_t>(wire_bytes({}));
  const auto message = static_cast<int64_t>(wire_bytes({{}, 0, std::vector<float>(batch, 1.f)}));
  CHECK(message == header + batch * static_cast<int64_t>(sizeof(float)));
  CHECK(header < 64);
  for (std::size_t j = 0; j + 1 < J; ++j) {
    CAPTURE(j);
    CHECK(stages[j].upstream_messages == count);
    CHECK(stages[j].upstream_bytes == count * message);
    CHECK(t.stages[j]["upstream_bytes"].get<int64_t>() == count * message);  // as metrics.jsonl has it
  }
  // The last stage's backward is the loss actor's answer (dlogits), as in every method; no stage
  // sends anything upstream.
  CHECK(stages[J - 1].upstream_messages == 0);
  CHECK(stages[J - 1].upstream_bytes == 0);

  // Greedy local learning: nothing at all comes back.
  const trained local = train_once(fg_config("lockstep", variants[2]));
  for (const stage_report& r : local.totals.epochs.back().stages) CHECK(r.upstream_messages == 0);
}

TEST_CASE("lockstep forward_gradient across two processes: bit-identical to simulate, the same bytes back") {
  PETRA_REQUIRE_FASHION_MNIST();
  node_process node;
  const trained sim = train_once(fg_config("simulate", variants[0]));
  config::run_config split = fg_config("lockstep", variants[0]);
  split.pipeline.nodes = {"local", node.address(), node.address(), "local"};
  const trained two = train_once(split);
  CHECK(differing(sim, two) == 0);  // the node's stages hand back their auxiliary heads too
  CHECK(two.totals.loss_sum == sim.totals.loss_sum);
  const int64_t count = two.totals.micro_batches;
  const auto message = static_cast<int64_t>(wire_bytes({{}, 0, std::vector<float>(8, 1.f)}));
  for (std::size_t j = 0; j + 1 < two.stages.size(); ++j) {
    CAPTURE(j);
    CHECK(two.stages[j]["upstream_messages"].get<int64_t>() == count);
    CHECK(two.stages[j]["upstream_bytes"].get<int64_t>() == count * message);
  }
}

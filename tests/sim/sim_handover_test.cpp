// The hand-over between backends on simulated devices (docs/design.md §5): every path keeps the values
// exact, the same device shares memory, the event is what orders a consumer, and a tensor is
// refused wherever its hand-over is missing.
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "compute/sim/sim_backend.hpp"
#include "tests/sim/sim_fixture.hpp"

using namespace petra;
using namespace petra::testing;
using petra::test::random_tensor;

namespace {

const device sim0{device_type::sim, 0}, sim1{device_type::sim, 1}, host{};

/// 2^rounds · x, by `rounds` additions of a tensor to itself: a chain whose result is exact and
/// differs from every intermediate.
tensor doubled(backend& be, tensor t, int rounds) {
  for (int i = 0; i < rounds; ++i) t = be.add(t, t);
  return t;
}

tensor scaled(const tensor& x, float factor) {
  tensor out = x.clone();
  for (int64_t i = 0; i < out.numel(); ++i) out.data()[i] *= factor;
  return out;
}

}  // namespace

TEST_CASE("same device, another stream: no copy, the consumer computes on the producer's memory") {
  sim_run run;
  auto producer = run.make(0), consumer = run.make(0);
  std::mt19937 rng(10);
  const tensor x = random_tensor({4, 8, 5, 5}, rng);
  const tensor y = doubled(*producer, producer->from_host(x), 3);
  const tensor sent = producer->export_for(y, sim0);
  CHECK(sent.shares_storage_with(y));
  const tensor received = consumer->import(sent);
  CHECK(received.shares_storage_with(y));  // the same memory, now usable on the consumer's stream
  CHECK(consumer->import(received).shares_storage_with(y));  // importing twice is harmless
  const tensor z = consumer->add(received, received);
  CHECK(bit_equal(on_host(*consumer, z), scaled(x, 16.f)));
  // The producer's own tensors need no import on its own stream.
  CHECK(producer->import(y).shares_storage_with(y));
}

TEST_CASE("sim:0 to sim:1: a copy on the consumer's device, after the producer's point") {
  sim_run run;
  auto producer = run.make(0), consumer = run.make(1);
  std::mt19937 rng(11);
  const tensor x = random_tensor({2, 3, 4, 4}, rng);
  // The producer's device does nothing until the consumer has queued its import: the consumer's
  // copy must wait for the event, not for luck.
  auto paused = run.devices->pause(0);
  const tensor y = doubled(*producer, producer->from_host(x), 5);
  const tensor received = consumer->import(producer->export_for(y, sim1));
  CHECK(received.where() == sim1);
  CHECK_FALSE(received.shares_storage_with(y));
  paused.release();
  CHECK(bit_equal(on_host(*consumer, received), scaled(x, 32.f)));
}

TEST_CASE("sim to the host and back: export to a host tensor, import uploads, a serialized round trip") {
  sim_run run;
  auto first = run.make(0), second = run.make(1);
  auto cpu = make_cpu_backend(1);
  std::mt19937 rng(12);
  const tensor x = random_tensor({3, 5}, rng);
  const tensor on_sim = first->relu_forward(first->from_host(x));
  const tensor exported = first->export_for(on_sim, host);
  REQUIRE(exported.where() == host);
  const tensor expected = cpu->relu_forward(x);
  CHECK(bit_equal(exported, expected));
  CHECK(cpu->import(exported).shares_storage_with(exported));  // a CPU stage takes the handle

  // Another process: the payload as raw bytes, rebuilt there, imported by a sim backend.
  std::vector<char> wire(exported.bytes());
  std::memcpy(wire.data(), exported.data(), wire.size());
  tensor rebuilt = tensor::empty(exported.shape());
  std::memcpy(rebuilt.data(), wire.data(), wire.size());
  const tensor uploaded = second->import(rebuilt);
  CHECK(uploaded.where() == sim1);
  CHECK(bit_equal(second->to_host(uploaded), expected));

  // A CPU stage's output into a sim stage: import from the host.
  const tensor from_cpu = first->import(cpu->export_for(expected, sim0));
  CHECK(from_cpu.where() == sim0);
  CHECK(bit_equal(on_host(*first, first->add(from_cpu, on_sim)), scaled(expected, 2.f)));
  CHECK_FALSE(first->import(tensor{}).defined());
  CHECK_FALSE(first->export_for(tensor{}, host).defined());
}

TEST_CASE("the event orders the consumer: without the wait it reads memory not yet written") {
  // Each op sleeps on the worker, and the device is paused while both streams queue their work,
  // so the worker interleaves them round-robin: a consumer that does not wait runs its first op
  // before the producer's chain is done.
  const int latency_us = 200;
  std::mt19937 rng(13);
  const tensor x = random_tensor({2, 4, 6, 6}, rng, 0.5f, 1.f);  // positive: relu keeps 2^8·x
  const tensor expected = scaled(x, 256.f);
  for (bool skip_wait : {false, true}) {
    INFO((skip_wait ? "without" : "with") << " the event wait");
    sim_run run;
    auto producer = run.make(0, 1, latency_us);
    auto consumer = run.make(0, 1, latency_us, skip_wait);
    const tensor input = producer->from_host(x);
    producer->synchronize();
    auto paused = run.devices->pause(0);
    const tensor y = doubled(*producer, input, 8);
    const tensor z = consumer->relu_forward(consumer->import(producer->export_for(y, sim0)));
    paused.release();
    const tensor result = on_host(*consumer, z);
    if (skip_wait)
      CHECK_FALSE(bit_equal(result, expected));  // the missing wait shows, as a wrong result
    else
      CHECK(bit_equal(result, expected));
  }
}

TEST_CASE("the event orders a consumer on another device too") {
  std::mt19937 rng(14);
  const tensor x = random_tensor({8, 8}, rng, 0.5f, 1.f);
  for (bool skip_wait : {false, true}) {
    INFO((skip_wait ? "without" : "with") << " the event wait");
    sim_run run;
    auto producer = run.make(0), consumer = run.make(1, 1, 0, skip_wait);
    const tensor input = producer->from_host(x);
    producer->synchronize();
    auto paused = run.devices->pause(0);  // sim:0 runs nothing until the copy on sim:1 was queued
    const tensor received = consumer->import(producer->export_for(doubled(*producer, input, 2), sim1));
    if (skip_wait) {
      const tensor copied = on_host(*consumer, received);  // sim:1 copies while sim:0 is paused
      paused.release();
      CHECK_FALSE(bit_equal(copied, scaled(x, 4.f)));
    } else {
      paused.release();  // the copy waits for sim:0's point: it can only run after this
      CHECK(bit_equal(on_host(*consumer, received), scaled(x, 4.f)));
    }
  }
}

TEST_CASE("a missing hand-over is refused with a message that names it") {
  sim_run run;
  auto producer = run.make(0), consumer = run.make(0), other_device = run.make(1);
  auto cpu = make_cpu_backend(1);
  const tensor y = producer->relu_forward(producer->from_host(tensor::from_vector({2, 2}, {1, -2, 3, -4})));

  CHECK_THROWS_WITH_AS(y.data(), doctest::Contains("lives on sim:0"), std::logic_error);
  CHECK_THROWS_WITH_AS(y.clone(), doctest::Contains("host tensors only"), std::logic_error);
  CHECK_THROWS_WITH_AS(consumer->relu_forward(y), doctest::Contains("has not imported it"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(consumer->relu_forward(y), doctest::Contains("the hand-over is missing"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(consumer->import(y), doctest::Contains("was not exported"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(other_device->add(y, y), doctest::Contains("lives on sim:0, not on sim:1"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->relu_forward(y), doctest::Contains("lives on sim:0"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->import(y), doctest::Contains("must export it for cpu"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(producer->relu_forward(tensor::zeros({2})),
                       doctest::Contains("lives on cpu, not on sim:0"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(consumer->export_for(y, host), doctest::Contains("has not imported it"),
                       std::invalid_argument);
  const tensor on_gpu({2, 2}, std::make_shared<storage>(nullptr, 16, device{device_type::cuda, 0}, nullptr));
  CHECK_THROWS_WITH_AS(producer->import(on_gpu), doctest::Contains("through the host"),
                       std::invalid_argument);
  // After the hand-over the same calls work.
  const tensor received = consumer->import(producer->export_for(y, sim0));
  CHECK(on_host(*consumer, consumer->relu_forward(received)).to_vector() == std::vector<float>{1, 0, 3, 0});
}

TEST_CASE("an op that fails on the worker fails its stream, and every later call says so") {
  sim_run run;
  auto be = run.make(0);
  const tensor x = be->from_host(tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4}));
  const tensor one = be->from_host(tensor::from_vector({1}, {1.f}));
  const tensor negative = be->from_host(tensor::from_vector({1}, {-2.f}));
  // Only the kernel sees the running variance's values: the call itself returns.
  const tensor y = be->batch_norm_forward_eval(x, one, one, one, negative, 1e-5f);
  CHECK_THROWS_WITH_AS(be->synchronize(), doctest::Contains("an earlier op failed"), std::runtime_error);
  CHECK_THROWS_WITH_AS(be->relu_forward(x), doctest::Contains("running_var"), std::runtime_error);
  // Another stream of the device is unaffected.
  auto healthy = run.make(0);
  CHECK(healthy->to_host(healthy->from_host(tensor::from_vector({1}, {5.f}))).to_vector() ==
        std::vector<float>{5.f});
}

TEST_CASE("sim devices need the run's registry, and count the bytes of live tensors") {
  backend_options alone;
  CHECK_THROWS_WITH_AS(make_backend(sim0, alone), doctest::Contains("needs the run's simulated devices"),
                       std::invalid_argument);
  sim_run run;
  CHECK(run.bytes_in_use(0) == 0);
  {
    auto first = run.make(0), second = run.make(0), third = run.make(1);
    CHECK(first->where() == sim0);
    CHECK(first->name().find("sim:0") == 0);
    CHECK(dynamic_cast<sim_backend&>(*first).stream_id() != dynamic_cast<sim_backend&>(*second).stream_id());
    std::mt19937 rng(15);
    tensor kept = first->from_host(random_tensor({16, 16}, rng));
    CHECK(run.bytes_in_use(0) == 16 * 16 * 4);
    const tensor received = second->import(first->export_for(doubled(*first, kept, 4), sim0));
    const tensor copied = third->import(second->export_for(second->relu_forward(received), sim1));
    CHECK(run.bytes_in_use(1) == 16 * 16 * 4);
    (void)on_host(*third, copied);
    CHECK(run.bytes_in_use(0) > 16 * 16 * 4);
    CHECK(third->device_bytes_in_use() == run.bytes_in_use(1));
  }
  // Backends gone (they drained their streams first) and every handle dropped: nothing left.
  CHECK(run.bytes_in_use(0) == 0);
  CHECK(run.bytes_in_use(1) == 0);
}

// A stage's own work without an actor: busy time and faults.slow, the reports it makes, the
// hand-over on the CPU, and where an arriving message stands (training/arrival.hpp).
#include "training/stage_work.hpp"

#include <doctest/doctest.h>

#include <thread>

#include "tests/probe_block.hpp"
#include "training/arrival.hpp"

using namespace petra;
using namespace petra::training;

namespace {

stage_work sleeping_work(const std::shared_ptr<backend>& device, int ms) {
  std::vector<std::unique_ptr<block>> blocks;
  // A block that hands its input on after sleeping `ms` milliseconds: a computation of known least
  // length (the busy clock cannot count less).
  blocks.push_back(std::make_unique<testing::probe_block>(
      "sleeping", [ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }));
  return stage_work(
      device, std::make_shared<stage>(0, std::move(blocks), *device, optimizer_settings{}, stage_options{}));
}

}  // namespace

TEST_CASE("a stage's work: busy time counted, faults.slow stretches it, reports per phase and epoch") {
  auto device = std::shared_ptr<backend>(make_cpu_backend(1));
  stage_work work = sleeping_work(device, 2);
  work.begin_phase(nullptr, "coordinator", 0);
  const activation x{tensor::zeros({2, 1, 4, 4}), {}};
  bool slowed = true;
  const activation y = work.forward(x, 0, 0, 1.0, slowed);
  CHECK_FALSE(slowed);
  CHECK(y.x1.shape() == x.x1.shape());
  const stage_report first = work.report(3);
  CHECK(first.busy_seconds >= 0.002);  // at least the block's sleep
  CHECK(first.fault_events == 3);
  CHECK(work.compute().outstanding() == 1);

  // faults.slow 3: the forward then waits twice as long as it took, and all of it counts as busy.
  work.forward(x, 1, 1, 3.0, slowed);
  CHECK(slowed);
  CHECK(work.report(3).busy_seconds >= first.busy_seconds + 3 * 0.002);

  const stage::backward_result r =
      work.backward(y, activation{tensor::zeros({2, 1, 4, 4}), {}}, 0, 2, 1.0, slowed);
  CHECK_FALSE(slowed);
  CHECK(r.input_grad.x1.shape() == x.x1.shape());
  CHECK(work.compute().outstanding() == 1);

  // An epoch's report restarts the measurements: the next one counts from zero.
  const stage_report epoch = work.take_epoch_report(5);
  CHECK(epoch.fault_events == 5);
  CHECK(epoch.busy_seconds >= 5 * 0.002);
  CHECK(work.report(0).busy_seconds == 0.0);
  work.evaluate(x, 0);
  CHECK(work.report(0).busy_seconds >= 0.002);
}

TEST_CASE("a stage's work on the CPU hands its tensors over as they are") {
  auto device = std::shared_ptr<backend>(make_cpu_backend(1));
  stage_work work = sleeping_work(device, 0);
  const activation x{tensor::zeros({1, 1, 2, 2}), {}};
  const activation out = work.hand_out(x, petra::device{}, 0);
  CHECK(out.x1.data() == x.x1.data());  // a handle, no copy
  CHECK_FALSE(out.x2.defined());
  activation in = x;
  const activation host = work.on_host(in);
  CHECK(host.x1.shape() == x.x1.shape());
}

TEST_CASE("where a message stands against the stage's phase and wiring") {
  const arrival_context here{2, 1, 1, 4, true};  // stage 3, neighbours of generation 1, phase 4
  CHECK(classify_arrival(here, 1, 1, 4) == arrival::current);
  CHECK(classify_arrival(here, 3, 2, 4) == arrival::current);  // a rebuilt neighbour, wiring on its way
  CHECK(classify_arrival(here, 1, 0, 4) == arrival::fenced);   // the stage before, of an older generation
  CHECK(classify_arrival(here, 3, 0, 5) == arrival::fenced);   // fenced whatever its phase
  CHECK(classify_arrival(here, 1, 1, 5) == arrival::early);
  CHECK(classify_arrival(here, 1, 1, 3) == arrival::stale);
  CHECK(classify_arrival({2, 1, 1, 4, false}, 1, 1, 4) == arrival::stale);  // the phase has ended here
}

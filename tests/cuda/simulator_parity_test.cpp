// A short PETRA run (J = 6 stages, 20 ticks) through the reference simulator on the GPU against
// the same run on the CPU: losses, weights, optimizer state and running statistics agree.
#include <doctest/doctest.h>

#include "compute/models/revnet.hpp"
#include "compute/pipeline/partition.hpp"
#include "tests/cuda/parity.hpp"
#include "training/method.hpp"
#include "training/simulator.hpp"
#include "training/tick_schedule.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

// Ten optimizer steps per stage at lr 0.05 amplify fp32 differences only mildly on this net.
constexpr double run_tolerance = 1e-3;

struct petra_run {
  std::vector<std::unique_ptr<stage>> stages;
  run_totals totals;
  int64_t ticks = 0;

  /// tiny RevNet with blocks {2, 2}: stem, 2 couplings, downsampling, coupling, head, one per stage.
  petra_run(backend& be, int micro_batches) {
    revnet_spec spec = revnet_preset("tiny");
    spec.blocks = {2, 2};
    optimizer_settings o;
    o.lr = 0.05;
    o.accumulation = 1;
    o.schedule = schedule_kind::constant;
    method_options method;
    method.kind = method_kind::petra;
    auto blocks = build_revnet(spec, be, 3);
    const std::vector<int> partition = resolve_partition({}, blocks.size());
    auto groups = partition_blocks(std::move(blocks), partition);
    for (std::size_t j = 0; j < groups.size(); ++j)
      stages.push_back(std::make_unique<stage>(static_cast<int>(j), std::move(groups[j]), be, o,
                                               method.for_stage(0, j + 1 == groups.size())));
    std::vector<stage*> order;
    for (auto& s : stages) order.push_back(s.get());
    simulator sim(order, be, entry_spacing(method.kind, order.size()));
    std::mt19937 rng(9);  // the same data on both devices
    int64_t next_id = 0;
    totals = sim.run([&](micro_batch& mb) {
      if (next_id >= micro_batches) return false;
      mb.id = next_id++;
      mb.images = activation{be.from_host(random_host({4, 1, 8, 8}, rng)), {}};
      mb.labels.clear();
      for (int i = 0; i < 4; ++i) mb.labels.push_back(static_cast<int32_t>(rng() % 10));
      return true;
    });
    ticks = sim.ticks();
  }

  std::vector<tensor> state(backend& be) {
    std::vector<tensor> out;
    for (auto& s : stages) {
      for (parameter* p : s->parameters())
        out.push_back(be.to_host(p->value)), out.push_back(be.to_host(p->momentum));
      for (const buffer_ref& r : s->buffers()) out.push_back(be.to_host(*r.value));
    }
    return out;
  }
};

}  // namespace

TEST_CASE("PETRA on the GPU follows the CPU run for 20 ticks") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  petra_run on_cpu(*be.cpu, 10), on_gpu(*be.gpu, 10);
  REQUIRE(on_cpu.stages.size() == 6);
  CHECK(on_cpu.ticks == 20);  // 10 micro-batches + 2(J − 1) ticks to drain
  CHECK(on_gpu.ticks == on_cpu.ticks);
  CHECK(on_gpu.totals.micro_batches == on_cpu.totals.micro_batches);
  CHECK(on_gpu.totals.loss_sum == doctest::Approx(on_cpu.totals.loss_sum).epsilon(run_tolerance));
  const double error = relative_error(on_gpu.state(*be.gpu), on_cpu.state(*be.cpu));
  INFO("weights, momentum and running statistics: relative error " << error);
  CHECK(error < run_tolerance);
  for (std::size_t j = 0; j < on_gpu.stages.size(); ++j) CHECK(on_gpu.stages[j]->outstanding() == 0);
}

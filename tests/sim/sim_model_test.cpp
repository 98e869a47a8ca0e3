// Blocks, a whole RevNet and pipelines on simulated devices against the CPU, bit for bit: one sim
// backend for everything, and stages spread over the CPU, two streams of sim:0 and sim:1 with
// every message handed over. Nothing stays allocated once it is all released.
#include <doctest/doctest.h>

#include <cstring>

#include "compute/blocks/coupling.hpp"
#include "compute/blocks/downsample.hpp"
#include "compute/layers/conv_chain.hpp"
#include "compute/models/revnet.hpp"
#include "compute/pipeline/partition.hpp"
#include "tests/sim/block_checks.hpp"
#include "tests/sim/sim_fixture.hpp"
#include "training/method.hpp"
#include "training/simulator.hpp"
#include "training/tick_schedule.hpp"

using namespace petra;
using namespace petra::testing;
using petra::test::random_tensor;

namespace {

revnet_spec small_spec() {
  revnet_spec s = revnet_preset("tiny");
  s.blocks = {2, 2};  // stem, 2 couplings, downsampling, coupling, head
  return s;
}

}  // namespace

TEST_CASE("coupling and downsampling blocks on sim equal the CPU in every pass") {
  sim_run run;
  {
    auto sim = run.make(0);
    auto cpu = make_cpu_backend(1);
    std::mt19937 rng(40);
    coupling_block coupling_cpu(*cpu, "c", conv_chain::basic(8), 11),
        coupling_sim(*sim, "c", conv_chain::basic(8), 11);
    check_block(coupling_cpu, coupling_sim, *sim, {{4, 8, 6, 6}, {4, 8, 6, 6}}, rng);
    downsample_basic_block down_cpu(*cpu, "d", 4, 8, 2, 13), down_sim(*sim, "d", 4, 8, 2, 13);
    check_block(down_cpu, down_sim, *sim, {{4, 4, 8, 8}, {4, 4, 8, 8}}, rng);
  }
  CHECK(run.bytes_in_use(0) == 0);
}

TEST_CASE("a whole RevNet on sim: forward, loss and backward equal the CPU bit for bit") {
  sim_run run;
  {
    auto sim = run.make(0, 2);
    auto cpu = make_cpu_backend(2);
    auto net_cpu = build_revnet(small_spec(), *cpu, 5), net_sim = build_revnet(small_spec(), *sim, 5);
    std::mt19937 rng(41);
    const tensor images = random_tensor({4, 1, 8, 8}, rng);
    const std::vector<int32_t> labels = {3, 1, 4, 1};
    check_network_step(*cpu, *sim, net_cpu, net_sim, images, labels);
    CHECK(run.bytes_in_use(0) > 0);
  }
  CHECK(run.bytes_in_use(0) == 0);
}

namespace {

/// The small RevNet cut into one stage per block, stage j on `backends[j]` (PETRA: reversible
/// stages rebuild their input), trained on `count` micro-batches one after the other. Every
/// tensor that crosses from one stage to the next is handed over (export_for, import) as the
/// stage actors do: images from the host, activations forward, rebuilt outputs and gradients
/// backward, logits to a CPU loss and dlogits back.
struct handed_over_pipeline {
  std::vector<std::unique_ptr<stage>> stages;
  std::vector<backend*> on;

  handed_over_pipeline(const std::vector<backend*>& backends, int count) : on(backends) {
    optimizer_settings o;
    o.lr = 0.05;
    o.schedule = schedule_kind::constant;
    method_options method;
    method.kind = method_kind::petra;
    auto blocks = build_revnet(
        small_spec(), [&](std::size_t i) -> backend& { return *on[i]; }, 3);
    auto groups = partition_blocks(std::move(blocks), resolve_partition({}, blocks.size()));
    REQUIRE(groups.size() == on.size());
    for (std::size_t j = 0; j < groups.size(); ++j)
      stages.push_back(std::make_unique<stage>(static_cast<int>(j), std::move(groups[j]), *on[j], o,
                                               method.for_stage(0, j + 1 == groups.size())));
    auto loss_backend = make_cpu_backend(1);
    const device loss_device{};
    std::mt19937 rng(9);
    for (int id = 0; id < count; ++id) {
      const tensor images = random_tensor({4, 1, 8, 8}, rng);
      std::vector<int32_t> labels;
      for (int i = 0; i < 4; ++i) labels.push_back(static_cast<int32_t>(rng() % 10));
      std::vector<activation> outputs(on.size());
      activation x{on[0]->import(images), {}};
      for (std::size_t j = 0; j < on.size(); ++j) {
        outputs[j] = stages[j]->forward(x, id, id);
        if (j + 1 < on.size()) x = send(outputs[j], j, j + 1);
      }
      tensor dlogits;
      int64_t correct = 0;
      loss_backend->softmax_cross_entropy(
          loss_backend->import(on.back()->export_for(outputs.back().x1, loss_device)), labels, &dlogits,
          &correct);
      activation output = outputs.back(),
                 grad{on.back()->import(loss_backend->export_for(dlogits, on.back()->where())), {}};
      for (std::size_t j = on.size(); j-- > 0;) {
        const stage::backward_result r = stages[j]->backward(output, grad, id, id);
        if (j == 0) break;
        output = send(r.input, j, j - 1);
        grad = send(r.input_grad, j, j - 1);
      }
    }
  }

  /// What stage `from` sends to stage `to`, as stage `to` receives it.
  activation send(const activation& a, std::size_t from, std::size_t to) {
    const device where = on[to]->where();
    return {on[to]->import(on[from]->export_for(a.x1, where)),
            on[to]->import(on[from]->export_for(a.x2, where))};
  }

  std::vector<tensor> weights() {
    std::vector<tensor> out;
    for (std::size_t j = 0; j < stages.size(); ++j)
      for (parameter* p : stages[j]->parameters()) out.push_back(on[j]->export_for(p->value, device{}));
    return out;
  }
};

bool bit_identical(const std::vector<tensor>& a, const std::vector<tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!bit_equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("stages on cpu, two streams of sim:0 and sim:1, every message handed over, equal all-CPU") {
  auto cpu = make_cpu_backend(1);
  const std::vector<tensor> reference =
      handed_over_pipeline({cpu.get(), cpu.get(), cpu.get(), cpu.get(), cpu.get(), cpu.get()}, 5).weights();
  const std::vector<tensor> untrained =
      handed_over_pipeline({cpu.get(), cpu.get(), cpu.get(), cpu.get(), cpu.get(), cpu.get()}, 0).weights();
  REQUIRE_FALSE(bit_identical(reference, untrained));  // the five micro-batches changed the weights
  sim_run run;
  {
    auto a = run.make(0), b = run.make(0, 1, 50), c = run.make(1), cpu_stage = make_cpu_backend(1);
    auto d = run.make(0);
    // sim:0/A → cpu → sim:0/B → sim:0/D (same device, other stream) → sim:1 → sim:0/A.
    handed_over_pipeline mixed({a.get(), cpu_stage.get(), b.get(), d.get(), c.get(), a.get()}, 5);
    CHECK(bit_identical(mixed.weights(), reference));
  }
  CHECK(run.bytes_in_use(0) == 0);
  CHECK(run.bytes_in_use(1) == 0);
}

TEST_CASE("the reference simulator with every stage on one sim backend equals the CPU run bit for bit") {
  struct petra_run {
    std::vector<std::unique_ptr<stage>> stages;
    run_totals totals;
    petra_run(backend& be, int micro_batches) {
      optimizer_settings o;
      o.lr = 0.05;
      o.schedule = schedule_kind::constant;
      method_options method;
      method.kind = method_kind::petra;
      auto blocks = build_revnet(small_spec(), be, 3);
      auto groups = partition_blocks(std::move(blocks), resolve_partition({}, blocks.size()));
      for (std::size_t j = 0; j < groups.size(); ++j)
        stages.push_back(std::make_unique<stage>(static_cast<int>(j), std::move(groups[j]), be, o,
                                                 method.for_stage(0, j + 1 == groups.size())));
      std::vector<stage*> order;
      for (auto& st : stages) order.push_back(st.get());
      simulator sim(order, be, entry_spacing(method.kind, order.size()));
      std::mt19937 rng(9);
      int64_t next_id = 0;
      totals = sim.run([&](micro_batch& mb) {
        if (next_id >= micro_batches) return false;
        mb.id = next_id++;
        mb.images = activation{be.import(random_tensor({4, 1, 8, 8}, rng)), {}};
        mb.labels.clear();
        for (int i = 0; i < 4; ++i) mb.labels.push_back(static_cast<int32_t>(rng() % 10));
        return true;
      });
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
  auto cpu = make_cpu_backend(1);
  petra_run on_cpu(*cpu, 6);
  sim_run run;
  {
    auto sim = run.make(0);
    petra_run on_sim(*sim, 6);
    CHECK(on_sim.totals.micro_batches == 6);
    CHECK(on_sim.totals.loss_sum == on_cpu.totals.loss_sum);
    CHECK(on_sim.totals.correct == on_cpu.totals.correct);
    CHECK(bit_identical(on_sim.state(*sim), on_cpu.state(*cpu)));
  }
  CHECK(run.bytes_in_use(0) == 0);
}

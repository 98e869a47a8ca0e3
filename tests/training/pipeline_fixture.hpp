// A small RevNet cut into stages, and a stream of random micro-batches, for pipeline tests.
#pragma once

#include <random>

#include "compute/models/revnet.hpp"
#include "compute/pipeline/partition.hpp"
#include "tests/compute/gradcheck.hpp"
#include "training/simulator.hpp"
#include "training/tick_schedule.hpp"

namespace petra::testing {

/// stem, g1.b0, g1.b1 (couplings), g2.b0 (downsampling), g2.b1 (coupling), head: J = 6 with one block per
/// stage.
inline revnet_spec small_spec() {
  revnet_spec s = revnet_preset("tiny");
  s.blocks = {2, 2};
  return s;
}

struct pipeline_fixture {
  std::unique_ptr<backend> be = make_cpu_backend(1);
  std::vector<std::unique_ptr<stage>> stages;
  method_options method;

  pipeline_fixture(const method_options& m, double lr, int k, std::vector<int> stage_blocks = {},
                   int inversion_every = 0, uint64_t seed = 3, optimizer_kind kind = optimizer_kind::sgd)
      : method(m) {
    optimizer_settings o;
    o.kind = kind;
    o.lr = lr;
    o.accumulation = k;
    o.schedule = schedule_kind::constant;
    auto blocks = build_revnet(small_spec(), *be, seed);
    auto groups = partition_blocks(std::move(blocks), resolve_partition(stage_blocks, blocks.size()));
    for (std::size_t j = 0; j < groups.size(); ++j)
      stages.push_back(std::make_unique<stage>(static_cast<int>(j), std::move(groups[j]), *be, o,
                                               method.for_stage(inversion_every, j + 1 == groups.size())));
  }

  /// The simulator over these stages (loss on the same CPU backend), on the method's schedule.
  simulator make_simulator(bool backward_first = false) {
    std::vector<stage*> order;
    for (auto& s : stages) order.push_back(s.get());
    return simulator(order, *be, entry_spacing(method.kind, stages.size()), backward_first);
  }

  /// Runs `count` seeded random micro-batches of 4 images.
  run_totals run(simulator& sim, int count, uint64_t data_seed = 9) {
    std::mt19937 rng(static_cast<unsigned>(data_seed));
    int64_t next_id = 0;
    return sim.run([&](micro_batch& mb) {
      if (next_id >= count) return false;
      mb.id = next_id++;
      mb.images = activation{random_tensor({4, 1, 8, 8}, rng), {}};
      mb.labels.clear();
      for (int i = 0; i < 4; ++i) mb.labels.push_back(static_cast<int32_t>(rng() % 10));
      return true;
    });
  }

  std::vector<tensor> weights() {
    std::vector<tensor> out;
    for (auto& s : stages)
      for (parameter* p : s->parameters()) out.push_back(p->value.clone());
    return out;
  }
  std::vector<tensor> grads() {
    std::vector<tensor> out;
    for (auto& s : stages)
      for (parameter* p : s->parameters()) out.push_back(p->grad.clone());
    return out;
  }
};

inline method_options method_of(method_kind kind, bool stash_inputs = false, bool stash_weights = false) {
  method_options m;
  m.kind = kind;
  m.stash_inputs = stash_inputs;
  m.stash_weights = stash_weights;
  return m;
}

}  // namespace petra::testing

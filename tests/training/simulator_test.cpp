// The reference simulator against docs/design.md §1: delays, FIFO bounds, equivalences with backprop.
#include <doctest/doctest.h>

#include <cstring>

#include "tests/training/pipeline_fixture.hpp"
#include "training/memory_model.hpp"
#include "training/tick_schedule.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// ‖a − b‖ / ‖b‖ over all tensors together: per-tensor ratios would be dominated by conv biases
/// feeding batch norm, whose true gradient is 0 and whose computed one is round-off.
double max_relative_gap(const std::vector<tensor>& a, const std::vector<tensor>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (int64_t k = 0; k < a[i].numel(); ++k) {
      const double d = static_cast<double>(a[i].data()[k]) - b[i].data()[k];
      diff += d * d;
      norm += static_cast<double>(b[i].data()[k]) * b[i].data()[k];
    }
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

bool bit_identical(const std::vector<tensor>& a, const std::vector<tensor>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].numel() != b[i].numel() || std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0)
      return false;
  return a.size() == b.size();
}

}  // namespace

TEST_CASE("every method: stage j's backward comes 2(J-j) ticks after its forward") {
  for (const method_options& m :
       {method_of(method_kind::petra), method_of(method_kind::delayed, true, true),
        method_of(method_kind::delayed, true, false), method_of(method_kind::delayed, false, true)}) {
    pipeline_fixture f(m, 0.05, 2);
    simulator sim = f.make_simulator();
    f.run(sim, 12);
    const int64_t J = static_cast<int64_t>(f.stages.size());
    REQUIRE(J == 6);
    for (int64_t j = 0; j < J; ++j) {
      INFO(m.str() << " stage " << j + 1);
      const auto& delays = f.stages[j]->stats().delay_ticks;
      REQUIRE(delays.size() == 1);
      CHECK(delays.begin()->first ==
            round_trip_ticks(static_cast<std::size_t>(j), static_cast<std::size_t>(J)));
      CHECK(delays.begin()->second == 12);
    }
  }
}

TEST_CASE("FIFO: a non-reversible stage holds at most 2(J-j)+1 inputs, a reversible one none") {
  const method_options petra_method = method_of(method_kind::petra);
  pipeline_fixture f(petra_method, 0.05, 1);
  simulator sim = f.make_simulator();
  f.run(sim, 20);
  const std::size_t J = f.stages.size();
  for (std::size_t j = 0; j < J; ++j) {
    INFO("stage " << j + 1);
    const stage_stats& st = f.stages[j]->stats();
    if (f.stages[j]->reversible()) {
      CHECK(st.fifo_peak == 0);
      CHECK(st.fifo_peak_bytes == 0);
    } else {
      CHECK(st.fifo_peak == fifo_window(j, J));
    }
    CHECK(st.stash_peak == 0);               // PETRA never stores old weights
    CHECK(f.stages[j]->outstanding() == 0);  // drained
  }
}

TEST_CASE("staleness: stage j takes about 2(J-j)/k optimizer steps between forward and backward") {
  const method_options m = method_of(method_kind::petra);
  for (int k : {1, 2}) {
    pipeline_fixture f(m, 0.05, k);
    simulator sim = f.make_simulator();
    f.run(sim, 40);
    const int64_t J = static_cast<int64_t>(f.stages.size());
    for (int64_t j = 0; j < J; ++j) {
      const auto& st = f.stages[j]->stats().staleness_steps;
      int64_t most = -1, most_count = 0;
      for (auto& kv : st)
        if (kv.second > most_count) most = kv.first, most_count = kv.second;
      INFO("k " << k << " stage " << j + 1);
      CHECK(std::abs(static_cast<double>(most) - 2.0 * (J - 1 - j) / k) <= 1.0);
    }
  }
}

TEST_CASE("with the learning rate at 0, PETRA's gradients equal backprop's to round-off") {
  const int count = 10;
  pipeline_fixture bp(method_of(method_kind::backprop), 0.0, 1000);
  simulator sim_bp = bp.make_simulator();
  bp.run(sim_bp, count);
  for (const method_options& m :
       {method_of(method_kind::petra), method_of(method_kind::delayed, true, true)}) {
    pipeline_fixture f(m, 0.0, 1000);
    simulator sim = f.make_simulator();
    f.run(sim, count);
    for (std::size_t j = 0; j < f.stages.size(); ++j) {
      std::vector<tensor> a, b;
      for (parameter* p : f.stages[j]->parameters()) a.push_back(p->grad);
      for (parameter* p : bp.stages[j]->parameters()) b.push_back(p->grad);
      INFO(m.str() << " stage " << j + 1);
      CHECK(max_relative_gap(a, b) < 1e-4);
    }
  }
}

TEST_CASE("J = 1: PETRA is backprop, weights bit-identical after training") {
  pipeline_fixture bp(method_of(method_kind::backprop), 0.05, 2, {6});
  pipeline_fixture one(method_of(method_kind::petra), 0.05, 2, {6});
  REQUIRE(one.stages.size() == 1);
  simulator sim_bp = bp.make_simulator();
  simulator sim_one = one.make_simulator();
  bp.run(sim_bp, 8);
  one.run(sim_one, 8);
  CHECK(max_relative_gap(one.weights(), bp.weights()) == 0.0);
  CHECK(bit_identical(one.weights(), bp.weights()));
}

TEST_CASE("J stages of backprop equal one stage of backprop") {
  pipeline_fixture split(method_of(method_kind::backprop), 0.05, 2);
  pipeline_fixture whole(method_of(method_kind::backprop), 0.05, 2, {6});
  simulator a = split.make_simulator();
  simulator b = whole.make_simulator();
  split.run(a, 6);
  whole.run(b, 6);
  CHECK(bit_identical(split.weights(), whole.weights()));
}

TEST_CASE("a non-reversible stage sends back its exact input") {
  const method_options m = method_of(method_kind::petra);
  pipeline_fixture f(m, 0.05, 1);
  stage& downsample = *f.stages[3];  // g2.b0
  REQUIRE_FALSE(downsample.reversible());
  std::mt19937 rng(1);
  const activation x = random_activation({{4, 4, 8, 8}, {4, 4, 8, 8}}, rng);
  const activation y = downsample.forward(x, 0, 0);
  const activation dy = random_activation({y.x1.shape(), y.x2.shape()}, rng);
  const stage::backward_result r = downsample.backward(y, dy, 0, 2);
  CHECK(r.input.x1.shares_storage_with(x.x1));
  CHECK(r.input.x2.shares_storage_with(x.x2));
}

TEST_CASE("inversion error: exact with stashed weights, nonzero under PETRA's moving weights") {
  const method_options petra_method = method_of(method_kind::petra);
  const method_options stash = method_of(method_kind::delayed, false, true);
  pipeline_fixture p(petra_method, 0.1, 1, {}, 1);
  pipeline_fixture s(stash, 0.1, 1, {}, 1);
  simulator sim_p = p.make_simulator();
  simulator sim_s = s.make_simulator();
  p.run(sim_p, 16);
  s.run(sim_s, 16);
  const stage_stats& petra_stats = p.stages[1]->stats();  // g1.b0, reversible, delay 8
  const stage_stats& stash_stats = s.stages[1]->stats();
  REQUIRE(petra_stats.inversion_samples == 16);
  REQUIRE(stash_stats.inversion_samples == 16);
  CHECK(stash_stats.inversion_error_max < 1e-4);
  CHECK(petra_stats.inversion_error_max > 10 * stash_stats.inversion_error_max);
}

TEST_CASE("mismatched backward order is refused") {
  const method_options m = method_of(method_kind::petra);
  pipeline_fixture f(m, 0.05, 1);
  std::mt19937 rng(1);
  const activation x = random_activation({{4, 1, 8, 8}, {}}, rng);
  f.stages[0]->forward(x, 7, 0);
  CHECK_THROWS_WITH_AS(f.stages[0]->backward(x, x, 8, 1),
                       doctest::Contains("oldest outstanding forward is 7"), std::logic_error);
}

TEST_CASE("a dropped micro-batch leaves nothing behind: the others' backwards run in order") {
  const method_options m = method_of(method_kind::delayed, true, true);  // FIFO and stash both held
  pipeline_fixture f(m, 0.05, 1);
  stage& s = *f.stages[3];
  std::mt19937 rng(1);
  const activation x = random_activation({{4, 4, 8, 8}, {4, 4, 8, 8}}, rng);
  activation y;
  for (int64_t id = 0; id < 3; ++id) y = s.forward(x, id, id);
  const activation dy = random_activation({y.x1.shape(), y.x2.shape()}, rng);
  s.backward(y, dy, 0, 3);  // a step: micro-batches 1 and 2 hold a stashed version each
  CHECK(s.drop([](int64_t id) { return id == 5; }).empty());
  CHECK(s.drop([](int64_t id) { return id == 1; }) == std::vector<int64_t>{1});
  CHECK(s.outstanding_ids() == std::vector<int64_t>{2});
  CHECK(s.next_backward_id() == 2);  // 1 is gone
  s.backward(y, dy, 2, 4);
  CHECK(s.outstanding() == 0);
  CHECK(s.export_inflight().stash.empty());  // every stashed version released
}

TEST_CASE("measured FIFO and stash bytes equal the memory model's runtime bytes, in either tick order") {
  const method_options m = method_of(method_kind::delayed, true, true);
  for (const int k : {1, 2, 3})
    for (const bool backward_first : {false, true}) {
      // AdamW holds a second tensor per parameter; its lr is an Adam one.
      const optimizer_kind kind = k == 2 ? optimizer_kind::adamw : optimizer_kind::sgd;
      INFO("k = " << k << (backward_first ? ", backward first" : ", forward first")
                  << (kind == optimizer_kind::adamw ? ", AdamW" : ", SGD"));
      pipeline_fixture f(m, kind == optimizer_kind::adamw ? 1e-3 : 0.05, k, {}, 0, 3, kind);
      simulator sim = f.make_simulator(backward_first);
      f.run(sim, 40);  // long enough for the steady state, where the stash peak is reached
      // Profiles from an identically built model (the fixture's blocks now belong to stages).
      pipeline_fixture twin(m, 0.05, k);
      std::vector<std::vector<std::unique_ptr<block>>> groups;
      for (auto& s : twin.stages) groups.push_back(std::move(s->blocks()));
      const auto profiles = profile_stages(groups, {{4, 1, 8, 8}, {}}, kind);
      const std::size_t J = f.stages.size();
      for (std::size_t j = 0; j < J; ++j) {
        stage& s = *f.stages[j];
        const int64_t measured =
            static_cast<int64_t>(s.parameter_bytes() + s.optimizer_state_bytes() + s.buffer_bytes() +
                                 s.stats().fifo_peak_bytes + s.stats().stash_peak_bytes);
        INFO("stage " << j + 1);
        CHECK(measured == runtime_stage_bytes(profiles[j], j, J, true, true, k, 0, backward_first));
      }
    }
}

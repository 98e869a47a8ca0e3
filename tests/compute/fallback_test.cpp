// Adaptive fallback: the policy's hysteresis on sampled inversion errors, and a stage of couplings
// whose rebuilds are made to drift (its weights nudged between forward and backward) switching to
// its kept inputs, with the kept-input path's bits, and back once its rebuilds are accurate again.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compute/backend_factory.hpp"
#include "compute/pipeline/fallback_policy.hpp"
#include "tests/compute/overlap_fixture.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// Feeds `count` samples of `error`; returns how many switched the mode.
int feed(fallback_policy& p, int count, double error) {
  int switches = 0;
  for (int i = 0; i < count; ++i) switches += p.observe(error) ? 1 : 0;
  return switches;
}

constexpr int width = 4, batch = 4, side = 8;
constexpr double max_error = 1e-3;

/// Two basic couplings, seeded alike whatever the options: stages to compare bit for bit. No
/// optimizer step within a test (k is large), so both keep the weights they started with.
stage coupling_stage(backend& be, const stage_options& options) {
  std::vector<std::unique_ptr<block>> chain;
  for (int b = 0; b < 2; ++b)
    chain.push_back(std::make_unique<coupling_block>(be, "c" + std::to_string(b), conv_chain::basic(width),
                                                     200 + static_cast<uint64_t>(b)));
  optimizer_settings opt;
  opt.accumulation = 1000;
  opt.total_steps = 10;
  return stage(1, std::move(chain), be, opt, options);
}

stage_options fallback_options() {
  stage_options o;
  o.inversion_sample_every = 2;
  o.max_inversion_error = max_error;
  return o;
}

/// The seeded input and output gradient of micro-batch `id`.
std::pair<activation, activation> data_of(int64_t id) {
  std::mt19937 rng(static_cast<unsigned>(1000 + id));
  const activation_shape shape{{batch, width, side, side}, {batch, width, side, side}};
  activation x = random_activation(shape, rng);
  activation dy = random_activation(shape, rng);
  return {x, dy};
}

/// The backward of `id` with every weight of the stage moved by up to ±`drift` (0: none), restored
/// after: the rebuild inverts other weights than the forward used, so it misses the input. (Not a
/// scaling: the batch normalisation after each convolution would undo it.)
stage::backward_result backward_drifted(stage& s, const activation& y, const activation& dy, int64_t id,
                                        double drift) {
  std::vector<tensor> saved;
  for (parameter* p : s.parameters()) {
    saved.push_back(p->value.clone());
    for (int64_t i = 0; i < p->value.numel(); ++i)
      p->value.data()[i] += static_cast<float>(drift * ((i % 7) - 3) / 3);
  }
  stage::backward_result r = s.backward(y, dy, id, id);
  for (std::size_t i = 0; i < saved.size(); ++i) {
    tensor& w = s.parameters()[i]->value;
    std::memcpy(w.data(), saved[i].data(), w.bytes());
  }
  return r;
}

/// Forward and backward of micro-batch `id` in one go.
stage::backward_result step(stage& s, int64_t id, double drift) {
  const auto [x, dy] = data_of(id);
  const activation y = s.forward(x, id, id);
  return backward_drifted(s, y, dy, id, drift);
}

bool same_activation(const activation& a, const activation& b) {
  return same_bits(a.x1, b.x1) && same_bits(a.x2, b.x2);
}

}  // namespace

TEST_CASE(
    "fallback policy: keeps inputs once the mean of 8 samples exceeds e, rebuilds once it is below e/2") {
  fallback_policy p(0.1);
  CHECK(p.enabled());
  CHECK(feed(p, 7, 1.0) == 0);  // a window is 8 samples: 7 decide nothing, however large
  CHECK_FALSE(p.keeping());
  CHECK(p.observe(0.1) == true);  // mean (7 + 0.1)/8 > 0.1
  CHECK(p.keeping());
  CHECK(p.state().window.empty());  // the window restarts at the switch

  // Keeping: a mean of 0.06 is not below e/2; a window of six 0.06 and two 0.01 (0.0475) is.
  CHECK(feed(p, 8, 0.06) == 0);
  CHECK(p.keeping());
  CHECK(feed(p, 1, 0.01) == 0);  // the window slides: 0.05375
  CHECK(p.keeping());
  CHECK(feed(p, 1, 0.01) == 1);
  CHECK_FALSE(p.keeping());

  // Rebuilding: a mean at e (to round-off) stays, one just above it switches.
  CHECK(feed(p, 8, 0.1) == 0);
  CHECK_FALSE(p.keeping());
  CHECK(feed(p, 1, 0.1 + 8 * 1e-9) == 1);
  CHECK(p.keeping());
}

TEST_CASE("fallback policy: a diverged rebuild (NaN) keeps inputs, off, it never switches") {
  fallback_policy p(0.1);
  CHECK(feed(p, 8, std::numeric_limits<double>::quiet_NaN()) == 1);
  CHECK(p.keeping());
  CHECK(feed(p, 8, std::numeric_limits<double>::quiet_NaN()) == 0);
  CHECK(p.keeping());
  fallback_policy off(0);
  CHECK_FALSE(off.enabled());
  CHECK(feed(off, 100, 1.0) == 0);
  CHECK_FALSE(off.keeping());
  CHECK_THROWS_AS(fallback_policy(-1), std::invalid_argument);
  fallback_state too_long;
  too_long.window.assign(fallback_policy::window + 1, 0.0);
  CHECK_THROWS_AS(p.restore(too_long), std::invalid_argument);
}

TEST_CASE(
    "a stage whose rebuilds drift keeps its inputs, with the kept-input path's bits, then rebuilds again") {
  auto be = make_cpu_backend(1);
  stage s = coupling_stage(*be, fallback_options());
  stage_options keep;
  keep.keep_inputs = true;
  stage exact = coupling_stage(*be, keep);  // the same weights, always on the kept-input path
  CHECK_FALSE(s.falls_back());

  // 15 micro-batches with drifting rebuilds: 8 samples (1 in 2: 0, 2, ..., 14) whose mean exceeds e.
  for (int64_t id = 0; id < 15; ++id) {
    CHECK_FALSE(s.falls_back());
    step(s, id, 0.5);
    step(exact, id, 0.5);
  }
  CHECK(s.falls_back());
  CHECK(s.stats().fallback_switches == 1);
  CHECK(s.stats().inversion_samples == 8);
  CHECK(s.stats().inversion_error_sum / 8 > max_error);
  CHECK(s.stats().fallback_forwards == 0);
  const std::size_t sample_bytes = s.stats().fifo_peak_bytes;  // one sampled input held at a time

  // Micro-batches 15 and 16 are forwarded keeping their inputs (15 is not sampled: kept all the
  // same). Their backwards, drifting or not, are the kept-input path's bit for bit.
  for (int64_t id = 15; id < 17; ++id) {
    CAPTURE(id);
    const double drift = id == 15 ? 0.5 : 0.0;
    const auto [x, dy] = data_of(id);
    const activation y = s.forward(x, id, id);
    const activation y_exact = exact.forward(x, id, id);
    REQUIRE(same_activation(y, y_exact));
    for (stage* t : {&s, &exact})
      for (parameter* p : t->parameters()) be->fill_zero(p->grad);
    const stage::backward_result r = backward_drifted(s, y, dy, id, drift);
    const stage::backward_result r_exact = backward_drifted(exact, y_exact, dy, id, drift);
    CHECK(same_activation(r.input, x));  // the exact input, not a rebuild
    CHECK(same_activation(r.input_grad, r_exact.input_grad));
    for (std::size_t i = 0; i < s.parameters().size(); ++i) {
      CAPTURE(i);
      CHECK(same_bits(s.parameters()[i]->grad, exact.parameters()[i]->grad));
    }
  }
  CHECK(s.stats().fallback_forwards == 2);
  CHECK(s.stats().fifo_peak_bytes == sample_bytes);  // one input at a time here, sampled or kept
  CHECK(s.stats().inversion_samples == 9);           // micro-batch 16: measured while keeping

  // Keeping inputs while the rebuilds are accurate (no drift): 8 samples below e/2 (16, 18, ..., 30)
  // end the fallback.
  int64_t id = 17;
  while (s.falls_back()) {
    REQUIRE(id < 40);
    step(s, id++, 0.0);
  }
  CHECK(id == 31);  // the 8th sample, micro-batch 30, decided at its backward
  CHECK(s.stats().fallback_switches == 2);
  CHECK(s.stats().fallback_forwards == 16);  // 15 to 30
  // Rebuilding again: an unsampled micro-batch keeps nothing and gets its input rebuilt.
  const auto [x, dy] = data_of(31);
  const activation y = s.forward(x, 31, 31);
  const stage::inflight held = s.export_inflight();
  REQUIRE(held.outstanding.size() == 1);
  CHECK_FALSE(held.outstanding[0].kept);
  CHECK_FALSE(held.outstanding[0].input.x1.defined());
  CHECK_FALSE(same_activation(backward_drifted(s, y, dy, 31, 0.5).input, x));
}

TEST_CASE("fallback: a forward's backward follows the mode of its forward, across a switch") {
  auto be = make_cpu_backend(1);
  stage s = coupling_stage(*be, fallback_options());
  for (int64_t id = 0; id < 14; ++id) step(s, id, 0.5);
  // 14 and 15 are forwarded rebuilding; the backward of 14 (the 8th sample) switches the mode.
  const auto [x14, dy14] = data_of(14);
  const auto [x15, dy15] = data_of(15);
  const auto [x16, dy16] = data_of(16);
  const activation y14 = s.forward(x14, 14, 14);
  const activation y15 = s.forward(x15, 15, 15);
  backward_drifted(s, y14, dy14, 14, 0.5);
  REQUIRE(s.falls_back());
  const activation y16 = s.forward(x16, 16, 16);  // keeping: its input is held
  CHECK_FALSE(same_activation(backward_drifted(s, y15, dy15, 15, 0.5).input, x15));  // rebuilt
  CHECK(same_activation(backward_drifted(s, y16, dy16, 16, 0.5).input, x16));        // kept
}

TEST_CASE(
    "fallback: export_inflight / import_inflight carry the mode, its window and what each forward kept") {
  auto be = make_cpu_backend(1);
  stage s = coupling_stage(*be, fallback_options());
  for (int64_t id = 0; id < 16; ++id) step(s, id, 0.5);
  REQUIRE(s.falls_back());
  const auto [x16, dy16] = data_of(16);
  const auto [x17, dy17] = data_of(17);
  const activation y16 = s.forward(x16, 16, 16);
  backward_drifted(s, y16, dy16, 16, 0.0);  // one sample in the new window
  const activation y17 = s.forward(x17, 17, 17);
  const stage::inflight saved = s.export_inflight();
  REQUIRE(saved.outstanding.size() == 1);
  CHECK(saved.outstanding[0].kept);
  CHECK(saved.fallback.keeping);
  CHECK(saved.fallback.window.size() == 1);

  stage resumed = coupling_stage(*be, fallback_options());
  CHECK_FALSE(resumed.falls_back());
  resumed.import_inflight(saved);
  CHECK(resumed.falls_back());
  CHECK(resumed.export_inflight().fallback.window == saved.fallback.window);
  CHECK(resumed.stats().fallback_switches == 1);
  CHECK(same_activation(backward_drifted(resumed, y17, dy17, 17, 0.5).input, x17));  // kept

  // A kept forward without its input is refused.
  stage::inflight damaged = saved;
  damaged.outstanding[0].input = activation{};
  stage other = coupling_stage(*be, fallback_options());
  CHECK_THROWS_AS(other.import_inflight(damaged), std::runtime_error);
}

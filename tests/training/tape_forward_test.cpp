// The last stage tapes its forward (stage_options::tape_forward): its backward follows the forward
// with the same weights, so running the forward again in the backward, as a stage that keeps its
// input does, computes nothing new. The taped stage must give the same bits.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "tests/training/pipeline_fixture.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

bool bit_identical(const std::vector<tensor>& a, const std::vector<tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].shape() != b[i].shape() || std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0)
      return false;
  return true;
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

optimizer_settings settings(double lr, int k) {
  optimizer_settings o;
  o.lr = lr;
  o.accumulation = k;
  o.schedule = schedule_kind::constant;
  return o;
}

/// The fixture's last stage rebuilt from the same blocks with `options` (fresh optimizer state, as
/// the fixture's own before any step).
void replace_last(pipeline_fixture& f, const optimizer_settings& o, stage_options options) {
  const int j = static_cast<int>(f.stages.size()) - 1;
  std::vector<std::unique_ptr<block>> blocks = std::move(f.stages.back()->blocks());
  f.stages.back() = std::make_unique<stage>(j, std::move(blocks), *f.be, o, options);
}

}  // namespace

TEST_CASE("methods: only the last stage of PETRA and of delayed gradients without stashed weights tapes") {
  CHECK(method_of(method_kind::petra).for_stage(0, true).tape_forward);
  CHECK_FALSE(method_of(method_kind::petra).for_stage(0, false).tape_forward);
  CHECK(method_of(method_kind::delayed).for_stage(0, true).tape_forward);
  CHECK(method_of(method_kind::delayed, true, false).for_stage(0, true).tape_forward);
  CHECK_FALSE(method_of(method_kind::delayed, false, true).for_stage(0, true).tape_forward);
  CHECK_FALSE(method_of(method_kind::backprop).for_stage(0, true).tape_forward);  // taped throughout
  CHECK_FALSE(method_of(method_kind::forward_gradient).for_stage(0, true).tape_forward);
}

TEST_CASE(
    "the last stage's taped forward: the same weights and losses, bit for bit, as its forward run again") {
  for (const method_options& m : {method_of(method_kind::petra), method_of(method_kind::delayed)}) {
    INFO(m.str());
    const optimizer_settings o = settings(0.05, 2);
    pipeline_fixture taped(m, 0.05, 2, {2, 4});
    pipeline_fixture again(m, 0.05, 2, {2, 4});
    REQUIRE(taped.stages.size() == 2);
    stage_options plain = m.for_stage(0, false);  // keeps its input, runs the forward again
    replace_last(again, o, plain);
    simulator a = taped.make_simulator(), b = again.make_simulator();
    const run_totals ta = taped.run(a, 12), tb = again.run(b, 12);
    CHECK(ta.loss_sum == tb.loss_sum);
    CHECK(bit_identical(taped.weights(), again.weights()));
    // Both record the same: a forward and a backward per micro-batch, one input kept at a time.
    const stage_stats& sa = taped.stages.back()->stats();
    const stage_stats& sb = again.stages.back()->stats();
    CHECK(sa.forwards == sb.forwards);
    CHECK(sa.backwards == sb.backwards);
    CHECK(sa.fifo_peak == 1);
    CHECK(sb.fifo_peak == 1);
    CHECK(sa.delay_ticks == sb.delay_ticks);
  }
}

TEST_CASE("a stage that tapes its forward: a live tape until the backward, one micro-batch in flight") {
  const method_options m = method_of(method_kind::petra);
  pipeline_fixture f(m, 0.05, 1, {2, 4});
  stage& last = *f.stages.back();
  std::mt19937 rng(5);
  // The last stage's input is the first stage's output.
  const activation input = f.stages.front()->forward(activation{random_tensor({4, 1, 8, 8}, rng), {}}, 0, 0);
  const activation out = last.forward(input, 0, 0);
  CHECK_FALSE(last.can_export_inflight());  // the tape is not a snapshot's content
  CHECK_THROWS_AS(last.export_inflight(), std::logic_error);
  CHECK_THROWS_AS(last.forward(input, 1, 0), std::logic_error);
  const stage::backward_result r = last.backward(out, activation{tensor::zeros(out.x1.shape()), {}}, 0, 0);
  CHECK(r.input.x1.shares_storage_with(input.x1));  // the exact input it received goes back
  CHECK(last.can_export_inflight());
  CHECK(last.outstanding() == 0);
  // A dropped micro-batch takes its tape with it: the next forward starts a fresh one.
  last.forward(input, 1, 1);
  CHECK(last.drop([](int64_t id) { return id == 1; }) == std::vector<int64_t>{1});
  CHECK(last.can_export_inflight());
  last.forward(input, 2, 2);
  CHECK(last.outstanding() == 1);
}

TEST_CASE("a stage that tapes its forward, given a forward restored without its tape, runs it again") {
  const method_options m = method_of(method_kind::petra);
  const optimizer_settings o = settings(0.05, 1);
  pipeline_fixture taped(m, 0.05, 1, {2, 4});
  pipeline_fixture plain(m, 0.05, 1, {2, 4});
  replace_last(plain, o, m.for_stage(0, false));
  std::mt19937 rng(7);
  const activation images{random_tensor({4, 1, 8, 8}, rng), {}};
  const activation in_t = taped.stages.front()->forward(images, 0, 0);
  const activation in_p = plain.stages.front()->forward(images, 0, 0);
  const activation out_p = plain.stages.back()->forward(in_p, 0, 0);
  // The plain stage's in-flight state (its kept input) taken into the taped stage, which has no tape.
  taped.stages.back()->import_inflight(plain.stages.back()->export_inflight());
  REQUIRE(taped.stages.back()->outstanding() == 1);
  const activation grad{random_tensor(out_p.x1.shape(), rng), {}};
  const stage::backward_result rt = taped.stages.back()->backward(out_p, grad, 0, 0);
  const stage::backward_result rp = plain.stages.back()->backward(out_p, grad, 0, 0);
  CHECK(same_bits(rt.input_grad.x1, rp.input_grad.x1));
  CHECK(same_bits(rt.input.x1, in_t.x1));
  CHECK(bit_identical(taped.weights(), plain.weights()));
}

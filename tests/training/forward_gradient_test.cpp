// Forward gradients in the reference simulator: the estimate against the true gradient, J = 1
// against backprop, the scalar backward traffic, and the schedule's delays.
#include "training/forward_gradient.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "tests/training/pipeline_fixture.hpp"
#include "training/memory_model.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

method_options fg_method(guess_kind guess, target_kind target) {
  method_options m;
  m.kind = method_kind::forward_gradient;
  m.forward_gradient.guess = guess;
  m.forward_gradient.target = target;
  m.forward_gradient.aux_width = 6;
  return m;
}

/// A pipeline fixture trained by forward gradients; micro-batches of `batch` random 8×8 images.
struct fg_fixture : pipeline_fixture {
  std::unique_ptr<forward_gradient> fg;
  std::map<int64_t, micro_batch> data;

  fg_fixture(const method_options& m, double lr, int k, std::vector<int> stage_blocks, int count, int batch,
             int cosine_every = 0)
      : pipeline_fixture(m, lr, k, std::move(stage_blocks)) {
    optimizer_settings o;
    o.lr = lr;
    o.accumulation = k;
    o.schedule = schedule_kind::constant;
    std::vector<stage*> order;
    for (auto& s : stages) order.push_back(s.get());
    fg = std::make_unique<forward_gradient>(order, m.forward_gradient, small_spec().num_classes, o, 5,
                                            activation_shape{{1, 1, 8, 8}, {}}, cosine_every);
    std::mt19937 rng(11);
    for (int64_t id = 0; id < count; ++id) {
      micro_batch mb;
      mb.id = id;
      mb.images = activation{random_tensor({batch, 1, 8, 8}, rng), {}};
      for (int i = 0; i < batch; ++i) mb.labels.push_back(static_cast<int32_t>(rng() % 10));
      data[id] = mb;
    }
  }

  run_totals train() {
    simulator sim = make_simulator();
    if (method.kind == method_kind::forward_gradient) sim.use_forward_gradient(fg.get());
    auto next = data.begin();
    return sim.run([&](micro_batch& mb) {
      if (next == data.end()) return false;
      mb = (next++)->second;
      return true;
    });
  }

  /// ∇_{z_j} L of the mean loss at every stage output j < J, by a taped backward with today's weights.
  std::vector<activation> true_gradients(const micro_batch& mb) {
    tape t;
    std::vector<std::size_t> ends;
    activation h = mb.images;
    for (auto& s : stages) {
      for (auto& b : s->blocks()) h = b->forward(h, pass::recompute, &t);
      ends.push_back(s->blocks().size());
    }
    tensor dlogits;
    be->softmax_cross_entropy(h.x1, mb.labels, &dlogits, nullptr);
    std::vector<activation> grads(stages.size() - 1);
    activation d{dlogits, {}};
    for (std::size_t j = stages.size(); j-- > 0;) {
      if (j + 1 < stages.size()) grads[j] = activation{d.x1.clone(), d.x2.clone()};
      auto& blocks = stages[j]->blocks();
      for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) d = (*it)->backward(t, d);
    }
    return grads;
  }
};

/// ‖a − b‖ / ‖b‖.
double gap(const activation& a, const activation& b) {
  return std::sqrt(std::max(dot(a, a) - 2 * dot(a, b) + dot(b, b), 0.0) / dot(b, b));
}

bool bit_identical(const std::vector<tensor>& a, const std::vector<tensor>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].numel() != b[i].numel() || std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0)
      return false;
  return a.size() == b.size();
}

}  // namespace

TEST_CASE("guess = the true global gradient: the estimate is that gradient (projection on itself)") {
  for (int batch : {1, 4}) {
    CAPTURE(batch);
    fg_fixture f(fg_method(guess_kind::local, target_kind::global), 0.0, 1, {}, 4,
                 batch);  // lr 0: fixed weights
    const std::size_t J = f.stages.size();
    std::map<int64_t, std::vector<activation>> truth;
    for (auto& [id, mb] : f.data) truth[id] = f.true_gradients(mb);
    f.fg->guess_for = [&](std::size_t j, int64_t id, const activation&) { return truth.at(id)[j]; };
    int estimates = 0;
    f.fg->on_estimate = [&](std::size_t j, int64_t id, const activation& estimate) {
      ++estimates;
      const activation& g = truth.at(id)[j];
      // Σ_n d_n = ⟨∇L, G̃⟩ = ‖g‖² whatever batch norm couples: ⟨ĝ, g⟩ = ‖g‖².
      CHECK(dot(estimate, g) == doctest::Approx(dot(g, g)).epsilon(1e-4));
      // Per sample d_n = ⟨∇_{z_n} L, g_n⟩ exactly where no later block mixes samples: with one sample,
      // or before the head alone (pooling and linear act per sample); later batch statistics
      // otherwise spread each sample's derivative over the batch.
      if (batch == 1 || j + 2 == J) CHECK(gap(estimate, g) < 1e-4);
    };
    f.train();
    CHECK(estimates == 4 * static_cast<int>(J - 1));
  }
}

TEST_CASE("J = 1: forward gradients are backprop (the last stage's gradient is the true one), bit for bit") {
  for (guess_kind guess : {guess_kind::local, guess_kind::random}) {
    fg_fixture bp(method_of(method_kind::backprop), 0.05, 2, {6}, 8, 4);  // the same micro-batches
    fg_fixture one(fg_method(guess, target_kind::global), 0.05, 2, {6}, 8, 4);
    REQUIRE(one.stages.size() == 1);
    CHECK(one.fg->aux_head(0) == nullptr);  // the last stage has the true loss: no auxiliary head
    bp.train();
    one.train();
    CHECK(bit_identical(one.weights(), bp.weights()));
  }
}

TEST_CASE("J = 2, local target: stage 1 is backprop through itself and its auxiliary head") {
  fg_fixture f(fg_method(guess_kind::local, target_kind::local), 0.05, 1, {1, 5}, 1, 4);
  // The same stem and head, trained by backprop of one micro-batch through stem → auxiliary head.
  fg_fixture ref(fg_method(guess_kind::local, target_kind::local), 0.05, 1, {1, 5}, 1, 4);
  stage& stem = *ref.stages[0];
  local_loss& aux = *ref.fg->aux_head(0);
  const micro_batch& mb = ref.data.at(0);
  tape t;
  activation z = mb.images;
  for (auto& b : stem.blocks()) z = b->forward(z, pass::train, &t);
  activation d = aux.step(z, mb.labels).grad;  // the head steps (k = 1)
  for (auto it = stem.blocks().rbegin(); it != stem.blocks().rend(); ++it) d = (*it)->backward(t, d);
  stem.optimizer().step();

  f.train();
  std::vector<tensor> got, want;
  for (parameter* p : f.stages[0]->parameters()) got.push_back(p->value);
  for (parameter* p : f.fg->aux_head(0)->parameters()) got.push_back(p->value);
  for (parameter* p : stem.parameters()) want.push_back(p->value);
  for (parameter* p : aux.parameters()) want.push_back(p->value);
  CHECK(bit_identical(got, want));
}

TEST_CASE("the backward message is one float per sample per stage: bytes sent upstream per micro-batch") {
  const int count = 5, batch = 4;
  fg_fixture global(fg_method(guess_kind::local, target_kind::global), 0.05, 2, {}, count, batch);
  const int64_t J = static_cast<int64_t>(global.stages.size());
  const run_totals totals = global.train();
  CHECK(totals.micro_batches == count);
  const forward_gradient_traffic& sent = global.fg->traffic();
  CHECK(sent.upstream_messages == count * (J - 1));
  CHECK(sent.upstream_bytes / count == (J - 1) * batch * static_cast<int64_t>(sizeof(float)));
  CHECK(sent.tangent_bytes > 0);  // the tangents travel forward beside the activations

  fg_fixture local(fg_method(guess_kind::random, target_kind::local), 0.05, 2, {}, count, batch);
  local.train();
  CHECK(local.fg->traffic().upstream_bytes == 0);  // greedy local learning sends nothing back
  CHECK(local.fg->traffic().tangent_bytes == 0);
}

TEST_CASE(
    "schedule: stage j's backward comes J - j ticks after its forward (0 at the last stage and when local)") {
  for (target_kind target : {target_kind::global, target_kind::local}) {
    fg_fixture f(fg_method(guess_kind::random, target), 0.05, 2, {}, 6, 2);
    f.train();
    const std::size_t J = f.stages.size();
    for (std::size_t j = 0; j < J; ++j) {
      CAPTURE(j);
      const int64_t expected = forward_gradient_ticks(j, J, target == target_kind::local);
      CHECK(expected == (target == target_kind::local || j + 1 == J ? 0 : static_cast<int64_t>(J - j)));
      CHECK(f.stages[j]->stats().delay_ticks == std::map<int64_t, int64_t>{{expected, 6}});
    }
  }
}

TEST_CASE("random guesses: N(0, 1), the same for the same (seed, stage, micro-batch) and only then") {
  auto be = make_cpu_backend(1);
  const activation like{tensor::zeros({4, 8, 16, 16}), tensor::zeros({4, 8, 16, 16})};
  const activation a = gaussian_guess(*be, like, 7, 2, 30);
  const activation same = gaussian_guess(*be, like, 7, 2, 30);
  CHECK(bit_identical({a.x1, a.x2}, {same.x1, same.x2}));
  CHECK_FALSE(bit_identical({a.x1}, {gaussian_guess(*be, like, 7, 2, 31).x1}));
  CHECK_FALSE(bit_identical({a.x1}, {gaussian_guess(*be, like, 7, 3, 30).x1}));
  CHECK_FALSE(bit_identical({a.x1}, {gaussian_guess(*be, like, 8, 2, 30).x1}));
  const double n = static_cast<double>(a.x1.numel() + a.x2.numel());
  double sum = 0;
  for (const tensor& t : {a.x1, a.x2})
    for (int64_t e = 0; e < t.numel(); ++e) sum += t.data()[e];
  CHECK(std::abs(sum / n) < 0.03);
  CHECK(dot(a, a) / n == doctest::Approx(1.0).epsilon(0.05));
  // Normal, not merely unit variance: the shares within 1 and 2 standard deviations, and the two
  // streams drawn apart (not the same values twice).
  double within1 = 0, within2 = 0;
  for (const tensor& t : {a.x1, a.x2})
    for (int64_t e = 0; e < t.numel(); ++e) {
      within1 += std::abs(t.data()[e]) < 1.f;
      within2 += std::abs(t.data()[e]) < 2.f;
    }
  CHECK(within1 / n == doctest::Approx(0.6827).epsilon(0.03));
  CHECK(within2 / n == doctest::Approx(0.9545).epsilon(0.01));
  CHECK_FALSE(bit_identical({a.x1}, {a.x2}));
}

TEST_CASE("projection: ĝ_n = (d_n / ‖G̃_n‖²) G̃_n per sample") {
  auto be = make_cpu_backend(1);
  const activation guess{tensor::from_vector({2, 1, 1, 2}, {3, 4, 0, 2}),
                         tensor::from_vector({2, 1, 1, 1}, {0, 0})};
  const activation g = project_on_guess(*be, guess, {50.f, -8.f});
  CHECK(g.x1.to_vector() == std::vector<float>{6, 8, 0, -4});  // 50/25·(3,4); −8/4·(0,2)
  CHECK(per_sample_dot(*be, guess, guess) == std::vector<double>{25, 4});
  CHECK(project_on_guess(*be, {tensor::zeros({1, 1, 1, 2}), {}}, {1.f}).x1.to_vector() ==
        std::vector<float>{0, 0});
}

TEST_CASE("cosine diagnostic: 1 for an exact estimate, and the true backward on the side changes nothing") {
  fg_fixture f(fg_method(guess_kind::local, target_kind::global), 0.0, 1, {}, 4, 1, 2);
  std::map<int64_t, std::vector<activation>> truth;
  for (auto& [id, mb] : f.data) truth[id] = f.true_gradients(mb);
  f.fg->guess_for = [&](std::size_t j, int64_t id, const activation&) { return truth.at(id)[j]; };
  f.train();
  for (std::size_t j = 0; j + 1 < f.stages.size(); ++j) {
    CAPTURE(j);
    const gradient_cosine c = f.fg->take_cosine(j);
    CHECK(c.samples == 2);  // micro-batches 0 and 2 of 4
    CHECK(c.min > 1 - 1e-6);
    CHECK(f.fg->take_cosine(j).samples == 0);  // taking starts a new record
  }
  CHECK(f.fg->take_cosine(f.stages.size() - 1).samples == 0);  // the last stage's gradient is exact

  for (guess_kind guess : {guess_kind::local, guess_kind::random}) {
    fg_fixture sampled(fg_method(guess, target_kind::global), 0.05, 2, {}, 8, 4, 1);
    fg_fixture plain(fg_method(guess, target_kind::global), 0.05, 2, {}, 8, 4, 0);
    sampled.train();
    plain.train();
    CHECK(bit_identical(sampled.weights(), plain.weights()));
    const gradient_cosine c = sampled.fg->take_cosine(0);
    CHECK(c.samples == 8);
    if (guess == guess_kind::local)
      CHECK(c.sum / c.samples > 0.0);  // the local guess leans toward the true gradient
    else
      CHECK(std::isfinite(c.sum / c.samples));
  }
}

TEST_CASE("held bytes: kept inputs, guesses and auxiliary heads equal the memory model's, global and local") {
  for (target_kind target : {target_kind::global, target_kind::local}) {
    const method_options m = fg_method(guess_kind::local, target);
    fg_fixture f(m, 0.05, 2, {}, 12, 4);
    f.train();
    pipeline_fixture twin(m, 0.05, 2);
    std::vector<std::vector<std::unique_ptr<block>>> groups;
    for (auto& s : twin.stages) groups.push_back(std::move(s->blocks()));
    const auto profiles = profile_stages(groups, {{4, 1, 8, 8}, {}});
    const std::size_t J = f.stages.size();
    for (std::size_t j = 0; j < J; ++j) {
      CAPTURE(j);
      stage& s = *f.stages[j];
      int64_t aux_params = 0, aux_buffers = 0;
      if (local_loss* aux = f.fg->aux_head(j)) {
        for (parameter* p : aux->parameters()) aux_params += p->value.numel();
        for (const buffer_ref& b : aux->buffers()) aux_buffers += b.value->numel();
      }
      const int64_t measured =
          static_cast<int64_t>(s.parameter_bytes() + s.optimizer_state_bytes() + s.buffer_bytes() +
                               s.stats().fifo_peak_bytes + f.fg->guess_peak_bytes(j)) +
          (3 * aux_params + aux_buffers) * 4;
      CHECK(measured == forward_gradient_stage_bytes(profiles[j], j, J, aux_params, aux_buffers,
                                                     target == target_kind::local));
    }
  }
}

// The RevViT blocks (patch stem, reversible transformer block, token head) on the CPU: every
// gradient against central differences, the inverse, the rebuild's tape, forward mode, samples kept
// apart by attention, and a whole odd-depth model layer by layer through PETRA's rebuilds.
#include <doctest/doctest.h>

#include "compute/blocks/patch_stem.hpp"
#include "compute/blocks/token_head.hpp"
#include "compute/blocks/transformer.hpp"
#include "compute/models/revvit.hpp"
#include "tests/compute/jvp_check.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// Parameters far from their initial values (std 0.02 weights make F and G nearly zero, and a
/// wrong gradient of a tiny term would hide under the checks' absolute floor): weights and
/// embeddings N(0, scale²), layer-norm γ around 1 and β around 0.
void randomize(block& b, std::mt19937& rng, float scale = 0.4f) {
  for (parameter* p : b.parameters()) {
    tensor v = random_tensor(p->value.shape(), rng, scale);
    const bool gamma = p->name.find("norm.weight") != std::string::npos;
    if (gamma)
      for (int64_t i = 0; i < v.numel(); ++i) v.data()[i] += 1.f;
    p->value = v;
  }
}

/// ‖a − b‖/‖b‖, with ‖b‖ at least `floor`: the key projection's bias has a zero gradient in exact
/// arithmetic (it shifts a query's scores by one constant, which the softmax ignores), so both sides
/// are round-off there.
double relative_error(const tensor& a, const tensor& b, double floor = 1e-2) {
  double diff = 0, norm = floor * floor;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = static_cast<double>(a.data()[i]) - b.data()[i];
    diff += d * d;
    norm += static_cast<double>(b.data()[i]) * b.data()[i];
  }
  return std::sqrt(diff / norm);
}

/// Sample n of (N, …) as a vector.
std::vector<float> sample(const tensor& t, int64_t n) {
  const int64_t per = t.numel() / t.dim(0);
  return std::vector<float>(t.data() + n * per, t.data() + (n + 1) * per);
}

revvit_spec small_spec(int depth) {
  revvit_spec s;
  s.name = "revvit_test";
  s.in_channels = 2, s.height = 8, s.width = 8;
  s.num_classes = 3;
  s.depth = depth;
  s.embed_dim = 8, s.heads = 2, s.patch = 4;
  s.mlp_ratio = 2.0;
  return s;
}

}  // namespace

TEST_CASE("transformer block: backward matches finite differences for both inputs and every parameter") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(61);
  transformer_block b(*be, "b0", 8, 2, 16, 5);
  CHECK(b.parameters().size() == 16);  // 2 norms, q, k, v, out, fc1, fc2: weight and bias each
  randomize(b, rng);
  check_block_gradients(b, random_activation({{3, 5, 8}, {3, 5, 8}}, rng), rng);
  transformer_block one_head(*be, "b1", 6, 1, 6, 6);
  randomize(one_head, rng);
  check_block_gradients(one_head, random_activation({{1, 7, 6}, {1, 7, 6}}, rng), rng);
}

TEST_CASE("patch stem: tokens in patch order plus the position embedding, in both streams, and gradients") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(62);
  patch_stem_block stem(*be, "stem", 2, 8, 12, 4, 6, 5);
  stem.set_input_grad(true);
  const activation x = random_activation({{3, 2, 8, 12}, {}}, rng);
  const activation y = stem.forward(x, pass::train, nullptr);
  REQUIRE(y.x1.shape() == shape_t{3, 6, 6});  // 2×3 patches of 4×4
  CHECK(y.x1.to_vector() == y.x2.to_vector());
  CHECK(!y.x1.shares_storage_with(y.x2));
  // Token 4 (patch row 1, column 1), feature 5 of sample 2: the convolution at that patch plus the
  // position embedding's entry.
  const std::vector<parameter*> params = stem.parameters();  // weight, bias, position
  const float* w = params[0]->value.data();
  double expected = params[1]->value.data()[5] + params[2]->value.data()[4 * 6 + 5];
  for (int c = 0; c < 2; ++c)
    for (int r = 0; r < 4; ++r)
      for (int s = 0; s < 4; ++s)
        expected += static_cast<double>(w[((5 * 2 + c) * 4 + r) * 4 + s]) *
                    x.x1.data()[((2 * 2 + c) * 8 + 4 + r) * 12 + 4 + s];
  CHECK(y.x1.data()[(2 * 6 + 4) * 6 + 5] == doctest::Approx(expected).epsilon(1e-5));

  randomize(stem, rng);
  check_block_gradients(stem, x, rng);
  CHECK_THROWS_WITH_AS(patch_stem_block(*be, "stem", 2, 8, 10, 4, 6, 5),
                       doctest::Contains("image 8×10 is not divisible into patches of 4×4"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(stem.forward(random_activation({{3, 2, 8, 8}, {}}, rng), pass::train, nullptr),
                       doctest::Contains("must be images (N, 2, 8, 12)"), std::invalid_argument);
}

TEST_CASE("token head: backward matches finite differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(63);
  token_head_block head(*be, "head", 4, 3, 5);
  randomize(head, rng);
  check_block_gradients(head, random_activation({{3, 5, 4}, {3, 5, 4}}, rng), rng);
  const activation_shape out = head.output_shape({{3, 5, 4}, {3, 5, 4}});
  CHECK(out.x1 == shape_t{3, 3});
  CHECK(out.x2.empty());
}

TEST_CASE("transformer block: the inverse rebuilds its input at fp32 round-off") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(64);
  transformer_block b(*be, "b0", 16, 4, 64, 7);
  randomize(b, rng, 0.2f);
  const activation x = random_activation({{4, 9, 16}, {4, 9, 16}}, rng);
  const activation y = b.forward(x, pass::train, nullptr);
  CHECK(relative_error(y.x1, x.x1) > 1e-2);  // F and G do change the streams
  CHECK(relative_error(y.x2, x.x2) > 1e-2);
  const activation back = b.inverse(y);
  CHECK(relative_error(back.x1, x.x1) < 1e-5);
  CHECK(relative_error(back.x2, x.x2) < 1e-5);
}

TEST_CASE("transformer block: rebuild_input then backward equals the backward on the forward's tape") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(65);
  transformer_block b(*be, "b0", 8, 2, 32, 8);
  randomize(b, rng, 0.3f);
  const activation x = random_activation({{3, 5, 8}, {3, 5, 8}}, rng);
  const activation dy = random_activation({{3, 5, 8}, {3, 5, 8}}, rng);

  tape forward_tape;
  const activation y = b.forward(x, pass::train, &forward_tape);
  const activation dx_taped = b.backward(forward_tape, dy);
  CHECK(forward_tape.empty());
  std::vector<tensor> taped_grads;
  for (parameter* p : b.parameters()) taped_grads.push_back(p->grad.clone()), be->fill_zero(p->grad);

  tape rebuilt_tape;
  const activation rebuilt = b.rebuild_input(*be, y, rebuilt_tape);
  tape again;
  b.forward(x, pass::recompute, &again);
  CHECK(rebuilt_tape.size() == again.size());  // the forward's entries, in its order
  const activation dx_rebuilt = b.backward(rebuilt_tape, dy);
  CHECK(rebuilt_tape.empty());
  CHECK(relative_error(rebuilt.x1, x.x1) < 1e-5);
  CHECK(relative_error(rebuilt.x2, x.x2) < 1e-5);
  CHECK(relative_error(dx_rebuilt.x1, dx_taped.x1) < 1e-5);
  CHECK(relative_error(dx_rebuilt.x2, dx_taped.x2) < 1e-5);
  const std::vector<parameter*> params = b.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    INFO(params[i]->name);
    CHECK(relative_error(params[i]->grad, taped_grads[i]) < 1e-4);
  }

  // backward_from_output is that rebuild and backward, to the bit.
  std::vector<tensor> rebuilt_grads;
  for (parameter* p : params) rebuilt_grads.push_back(p->grad.clone()), be->fill_zero(p->grad);
  auto [from_output, dx_fused] = b.backward_from_output(y, dy);
  CHECK(from_output.x1.to_vector() == rebuilt.x1.to_vector());
  CHECK(dx_fused.x2.to_vector() == dx_rebuilt.x2.to_vector());
  for (std::size_t i = 0; i < params.size(); ++i)
    CHECK(params[i]->grad.to_vector() == rebuilt_grads[i].to_vector());
}

TEST_CASE("RevViT blocks: JVPs match differences and the backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(66);
  patch_stem_block stem(*be, "stem", 2, 8, 8, 4, 6, 5);
  stem.set_input_grad(true);
  randomize(stem, rng);
  check_block_jvps(stem, random_activation({{3, 2, 8, 8}, {}}, rng), rng);
  transformer_block b(*be, "b0", 8, 2, 16, 5);
  randomize(b, rng);
  check_block_jvps(b, random_activation({{3, 5, 8}, {3, 5, 8}}, rng), rng);
  token_head_block head(*be, "head", 4, 3, 5);
  randomize(head, rng);
  check_block_jvps(head, random_activation({{3, 5, 4}, {3, 5, 4}}, rng), rng);
}

TEST_CASE("attention keeps samples apart: one sample's input changes only its own outputs and gradients") {
  auto be = make_cpu_backend(2);
  std::mt19937 rng(67);
  transformer_block b(*be, "b0", 8, 2, 16, 5);
  randomize(b, rng);
  const int64_t batch = 5;
  const activation x = random_activation({{batch, 6, 8}, {batch, 6, 8}}, rng);
  const activation dy = random_activation({{batch, 6, 8}, {batch, 6, 8}}, rng);
  tape t;
  const activation y = b.forward(x, pass::train, &t);
  const activation dx = b.backward(t, dy);
  for (int64_t changed = 0; changed < batch; ++changed) {
    INFO("sample " << changed << " changed");
    activation other{x.x1.clone(), x.x2.clone()};
    for (int64_t i = 0; i < 6 * 8; ++i) {
      other.x1.data()[changed * 6 * 8 + i] += 0.5f;
      other.x2.data()[changed * 6 * 8 + i] -= 0.25f;
    }
    tape u;
    const activation y2 = b.forward(other, pass::train, &u);
    const activation dx2 = b.backward(u, dy);
    for (int64_t n = 0; n < batch; ++n) {
      const bool same = n != changed;
      CHECK((sample(y2.x1, n) == sample(y.x1, n)) == same);
      CHECK((sample(y2.x2, n) == sample(y.x2, n)) == same);
      CHECK((sample(dx2.x1, n) == sample(dx.x1, n)) == same);
      CHECK((sample(dx2.x2, n) == sample(dx.x2, n)) == same);
    }
  }
}

TEST_CASE("an odd-depth RevViT: every block's gradient through PETRA's rebuilds matches differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(68);
  const revvit_spec spec = small_spec(3);
  auto blocks = build_revvit(spec, *be, 9);
  REQUIRE(blocks.size() == 5);
  for (auto& b : blocks) randomize(*b, rng, 0.3f);
  const tensor images = random_tensor({3, 2, 8, 8}, rng);
  const std::vector<int32_t> labels = {2, 0, 1};
  auto loss_at = [&] {
    activation h{images, {}};
    for (auto& b : blocks) h = b->forward(h, pass::recompute, nullptr);
    return static_cast<double>(be->softmax_cross_entropy(h.x1, labels, nullptr, nullptr));
  };

  // As a PETRA pipeline of one block per stage: each block keeps only its output; the reversible
  // ones rebuild their input from it and differentiate there.
  std::vector<activation> outputs;
  std::vector<tape> tapes(blocks.size());
  activation h{images, {}};
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const bool keeps = !blocks[i]->reversible();
    h = blocks[i]->forward(h, pass::train, keeps ? &tapes[i] : nullptr);
    outputs.push_back(h);
  }
  tensor dlogits;
  be->softmax_cross_entropy(h.x1, labels, &dlogits, nullptr);
  activation d{dlogits, {}};
  for (std::size_t i = blocks.size(); i-- > 0;)
    d = blocks[i]->reversible() ? blocks[i]->backward_from_output(outputs[i], d).second
                                : blocks[i]->backward(tapes[i], d);

  for (auto& b : blocks)
    for (parameter* p : b->parameters()) {
      INFO(p->name);
      const tensor v = random_direction(p->value.shape(), rng), saved = p->value;
      check_directional_derivative(
          [&](double s) {
            p->value = axpy(saved, s, v);
            const double loss = loss_at();
            p->value = saved;
            return loss;
          },
          dot(p->grad, v));
    }
  // The last transformer block's gradient is there (not stale, not zero).
  double last = 0;
  for (parameter* p : blocks[3]->parameters()) last += dot(p->grad, p->grad);
  CHECK(last > 0);
}

// model.arch revvit from the config to a trained pipeline: the keys' combinations refused naming
// the key, the block list cut into stages as any model's, and revvit_tiny_fmnist trained a few
// micro-batches in simulate: the loss falls under backprop and PETRA, and with one stage PETRA is
// backprop bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "tests/skip.hpp"
#include "training/setup.hpp"
#include "training/simulate_runtime.hpp"

using namespace petra;

namespace {

config::run_config revvit_config(const std::vector<std::string>& sets = {}) {
  return config::load_config("revvit_tiny_fmnist", sets);
}

std::string refusal_of(const config::run_config& c) {
  try {
    model_spec(c.model);
  } catch (const config::config_error& e) {
    return e.what();
  }
  return "(no error)";
}

/// revvit_tiny_fmnist on a slice of Fashion-MNIST in simulate, micro-batches of 16, a step each, with
/// the preset's AdamW at lr 0.008 · 16/256 = 5e-4 held constant (its warm-up would keep it near 0
/// for a few steps).
config::run_config small_run(const std::string& method, std::vector<int> stage_blocks = {}) {
  config::run_config c = revvit_config();
  c.runtime.mode = config::runtime_mode::simulate;
  c.training.method = config::parse_training_method(method);
  c.training.micro_batch = 16;
  c.training.accumulation = 1;
  c.training.optimizer.base_lr = 0.008;
  c.training.schedule.kind = config::lr_schedule::constant;
  c.training.schedule.warmup_epochs = 0;
  c.data.train_limit = 1024;
  c.data.test_limit = 16;
  c.pipeline.stage_blocks = std::move(stage_blocks);
  c.pipeline.threads.clear();
  c.output.progress = false;
  return c;
}

struct trained {
  std::vector<double> phase_losses;  // the mean loss of each phase
  std::vector<named_tensor> weights;
};

/// `phases` phases of `per_phase` micro-batches, one after the other.
trained train(const config::run_config& c, int phases, int64_t per_phase) {
  training_data data = load_training_data(c);
  const optimizer_settings opt =
      optimizer_for(c.training, data.train_feed->micro_batches_per_epoch() / c.training.accumulation);
  std::unique_ptr<pipeline_runtime> runtime = make_simulate_runtime(c, data, opt);
  trained out;
  for (int p = 0; p < phases; ++p)
    out.phase_losses.push_back(
        runtime->train(phase_request::of(1, p * per_phase, per_phase), {}).mean_loss());
  for (const stage_snapshot& s : runtime->snapshot())
    for (const named_tensor& n : s.tensors) out.weights.push_back(n);
  return out;
}

bool bit_identical(const std::vector<named_tensor>& a, const std::vector<named_tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].value.shape() != b[i].value.shape() ||
        std::memcmp(a[i].value.data(), b[i].value.data(), a[i].value.bytes()) != 0)
      return false;
  return true;
}

}  // namespace

TEST_CASE("model_spec: revvit's keys, or revvit's own shape where a key is 0") {
  const network_spec tiny = model_spec(revvit_config().model);
  REQUIRE(tiny.kind == network_spec::family::revvit);
  CHECK(tiny.revvit.depth == 6);
  CHECK(tiny.revvit.embed_dim == 128);
  CHECK(tiny.revvit.heads == 4);
  CHECK(tiny.revvit.patch == 4);
  CHECK(tiny.revvit.hidden() == 512);
  CHECK(tiny.revvit.tokens() == 49);
  CHECK(tiny.block_count() == 8);
  CHECK(stage_sizes(revvit_config()) == std::vector<int>(8, 1));
  CHECK(stage_sizes(revvit_config({"pipeline.stage_blocks=[2,3,3]"})) == std::vector<int>{2, 3, 3});

  config::model_config own;
  own.arch = config::model_arch::revvit;
  own.input = {3, 32, 32};
  const network_spec vit_s = model_spec(own);
  CHECK(vit_s.revvit.depth == 12);
  CHECK(vit_s.revvit.embed_dim == 384);
  CHECK(vit_s.revvit.heads == 6);
  CHECK(vit_s.revvit.patch == 4);
  CHECK(vit_s.revvit.mlp_ratio == 4.0);
}

TEST_CASE("model_spec: revvit keys that do not fit together are refused, naming the key") {
  CHECK(refusal_of(revvit_config({"model.heads=5"})) ==
        "model.heads: 5 heads do not divide model.width 128: each head takes width/heads features");
  CHECK(refusal_of(revvit_config({"model.patch=3"})) ==
        "model.patch: 3×3 patches do not tile model.input 28×28");
  CHECK(refusal_of(revvit_config({"model.width=6", "model.heads=2", "model.mlp_ratio=0.05"}))
            .rfind("model.mlp_ratio: a ratio of", 0) == 0);
  CHECK(refusal_of(revvit_config({"model.width=96", "model.heads=3", "model.patch=7"})) == "(no error)");
}

TEST_CASE("built stages: patch stem, one transformer block per stage, token head, on the config's devices") {
  const config::run_config c = revvit_config({"model.depth=3", "model.width=32", "model.heads=2"});
  const std::vector<placed_stage> placed = build_placed_stages(c, optimizer_for(c.training, 100));
  REQUIRE(placed.size() == 5);
  CHECK(placed[0].compute->blocks().front()->kind() == "stem");
  CHECK(placed[2].compute->blocks().front()->kind() == "transformer");
  CHECK(placed[2].compute->blocks().front()->name() == "b1");
  CHECK(placed[4].compute->blocks().front()->kind() == "head");
  CHECK(placed[1].input.x1 == shape_t{1, 49, 32});
  CHECK(placed[1].input.x2 == shape_t{1, 49, 32});
  CHECK(placed[4].compute->can_overlap_rebuild() == false);
  CHECK(placed[3].compute->can_overlap_rebuild());
}

TEST_CASE("revvit_tiny_fmnist in simulate: the loss falls under backprop and under PETRA") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  for (const char* method : {"backprop", "petra"}) {
    CAPTURE(method);
    const trained t = train(small_run(method), 3, 12);
    INFO("mean loss per phase of 12 micro-batches: " << t.phase_losses[0] << ", " << t.phase_losses[1] << ", "
                                                     << t.phase_losses[2]);
    // About ln 10 = 2.3 at the start; when written, 2.21 → 1.92 under backprop and 2.24 → 2.03
    // under PETRA (a mean over 12·16 images varies by a few hundredths).
    CHECK(t.phase_losses[0] > 2.0);
    CHECK(t.phase_losses[2] < t.phase_losses[0] - 0.15);
  }
}

TEST_CASE("revvit_tiny_fmnist, one stage: PETRA is backprop, weights bit for bit") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  const trained backprop = train(small_run("backprop", {8}), 1, 4);
  const trained petra = train(small_run("petra", {8}), 1, 4);
  REQUIRE(!backprop.weights.empty());
  CHECK(bit_identical(petra.weights, backprop.weights));
  // And trained: the weights moved from the initial ones.
  const trained none = train(small_run("backprop", {8}), 0, 0);
  CHECK(!bit_identical(none.weights, backprop.weights));
}

TEST_CASE("revvit_tiny_fmnist with forward gradients (random guesses, global target) trains in simulate") {
  if (!petra::testing::have_fashion_mnist()) PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  config::run_config c = small_run("backprop");
  c.training.method = config::training_method::forward_gradient;
  c.training.forward_gradient.guess = config::gradient_guess::random;
  const trained t = train(c, 1, 4);
  const trained none = train(small_run("backprop"), 0, 0);
  REQUIRE(t.weights.size() == none.weights.size());
  for (std::size_t i = 0; i < t.weights.size(); ++i) {
    CAPTURE(t.weights[i].name);
    const std::vector<float> after = t.weights[i].value.to_vector();
    for (float v : after) REQUIRE(std::isfinite(v));
    // Every tensor moved along its random guess; a layer norm's γ, at 1, may keep its bits where the
    // step is below half an ulp of 1.
    if (t.weights[i].name.find("norm.weight") == std::string::npos)
      CHECK(after != none.weights[i].value.to_vector());
  }
}

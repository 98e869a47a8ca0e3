// model.arch revvit and its keys: the presets that use them, each bad value refused naming its key,
// and each family's keys refused on the other family.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using namespace petra::config::testing;

TEST_CASE("the RevViT presets: tiny on Fashion-MNIST, ViT-S/4 on CIFAR-10, ViT-B/16 on ImageNet") {
  struct shape {
    const char* preset;
    std::vector<int> input;
    int classes, depth, width, heads, patch;
  };
  for (const shape& s : {shape{"revvit_tiny_fmnist", {1, 28, 28}, 10, 6, 128, 4, 4},
                         shape{"revvit_small_cifar10", {3, 32, 32}, 10, 12, 384, 6, 4},
                         shape{"revvit_base_imagenet", {3, 224, 224}, 1000, 12, 768, 12, 16}}) {
    CAPTURE(s.preset);
    const run_config c = load_config(s.preset);
    CHECK(c.model.arch == model_arch::revvit);
    CHECK(c.model.input == s.input);
    CHECK(c.model.num_classes == s.classes);
    CHECK(c.model.depth == s.depth);
    CHECK(c.model.width == s.width);
    CHECK(c.model.heads == s.heads);
    CHECK(c.model.patch == s.patch);
    CHECK(c.model.mlp_ratio == 4.0);
    CHECK(c.training.method == training_method::petra);
    CHECK(c.training.optimizer.kind == optimizer_kind::adamw);  // as ViTs are trained
    CHECK(c.training.optimizer.weight_decay == 0.05);
  }
}

TEST_CASE("revvit keys: a negative value is refused, naming the key and the line") {
  for (const char* key : {"depth", "width", "heads", "patch", "mlp_ratio"}) {
    CAPTURE(key);
    const std::string message =
        error_of("model:\n  arch: revvit\n  input: [1, 28, 28]\n  " + std::string(key) + ": -2\n");
    CHECK(contains(message, "model." + std::string(key) + " at runs/x.yaml:4"));
    CHECK(contains(message, "0 means revvit's own"));
  }
  CHECK(contains(error_of("model:\n  arch: revvit\n  input: [1, 28, 28]\n  mlp_ratio: .nan\n"),
                 "model.mlp_ratio"));
  CHECK(
      error_of(
          "model:\n  arch: revvit\n  input: [1, 28, 28]\n  depth: 2\n  width: 64\n  heads: 2\n  patch: 7\n  "
          "mlp_ratio: 2.5\n") == "(no error)");
}

TEST_CASE("each family's keys are refused on the other, naming the key and model.arch") {
  const std::string vit_key = error_of("model:\n  arch: tiny\n  heads: 4\n");
  CHECK(contains(vit_key,
                 "model.heads at runs/x.yaml:3: is a key of model.arch revvit but model.arch is 'tiny'"));
  const std::string revnet_key =
      error_of("model:\n  arch: revvit\n  input: [1, 28, 28]\n  widths: [16, 32]\n");
  CHECK(contains(revnet_key,
                 "model.widths at runs/x.yaml:4: is a key of the RevNet archs but model.arch is 'revvit'"));
  CHECK(contains(error_of("model:\n  arch: revvit\n  input: [1, 28, 28]\n", {"model.stem=cifar"}),
                 "model.stem in --set"));
}

TEST_CASE(
    "forward gradients with local guesses or targets are refused on revvit: their heads are RevNet heads") {
  const std::string yaml =
      "model:\n  arch: revvit\n  input: [1, 28, 28]\ntraining:\n  method: forward_gradient\n";
  CHECK(contains(error_of(yaml), "training.forward_gradient.guess (default): is local"));
  CHECK(contains(error_of(yaml + "  forward_gradient:\n    guess: random\n    target: local\n"),
                 "training.forward_gradient.target at runs/x.yaml:8: is local"));
  CHECK(error_of(yaml + "  forward_gradient:\n    guess: random\n") == "(no error)");
}

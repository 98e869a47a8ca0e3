// Every shipped preset loads and validates, and the named ones hold the recipes they promise.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "config/config.hpp"

using namespace petra::config;

namespace {
double goyal_lr(const run_config& c) {
  return c.training.optimizer.base_lr * c.training.micro_batch * c.training.accumulation / 256.0;
}
}  // namespace

TEST_CASE("every preset in presets_dir loads and validates") {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(presets_dir())) {
    if (entry.path().extension() != ".yaml") continue;
    CAPTURE(entry.path().string());
    CHECK_NOTHROW(load_config(entry.path().stem().string()));  // by preset name
    CHECK_NOTHROW(load_config(entry.path().string()));         // and by path
    ++loaded;
  }
  CHECK(loaded >= 5);
  for (const char* name :
       {"default", "backprop", "revnet18_cifar10", "revnet18_imagenet32", "revnet50_imagenet", "ci_smoke",
        "tiny", "revvit_tiny_fmnist", "revvit_small_cifar10", "revvit_base_imagenet"}) {
    CAPTURE(name);
    CHECK(std::filesystem::exists(std::filesystem::path(presets_dir()) / (std::string(name) + ".yaml")));
  }
}

TEST_CASE("default preset: PETRA on Fashion-MNIST with fashion_small, lr 0.05") {
  const run_config c = load_config("default");
  CHECK(to_string(c.model.arch) == "fashion_small");
  CHECK(c.model.input == std::vector<int>{1, 28, 28});
  CHECK(to_string(c.model.stem) == "cifar");
  CHECK(c.model.widths == std::vector<int>{16, 32, 64});
  CHECK(c.model.blocks == std::vector<int>{2, 2, 2});
  CHECK(c.pipeline.stage_blocks.empty());  // one block per stage: J = 2 + 6 = 8
  CHECK(to_string(c.data.dataset) == "fashion-mnist");
  CHECK(c.data.path == "/usr/share/datasets/fashion-mnist");
  CHECK(c.data.mean == std::vector<float>{0.2860f});
  CHECK(c.data.std == std::vector<float>{0.3530f});
  CHECK(c.data.crop_padding == 2);
  CHECK(c.data.flip);
  CHECK(c.training.method == training_method::petra);
  CHECK(c.training.epochs == 3);
  CHECK(c.training.micro_batch == 64);
  CHECK(c.training.accumulation == 2);
  CHECK(c.training.seed == 0);
  CHECK(c.training.optimizer.nesterov);
  CHECK(c.training.optimizer.momentum == 0.9);
  CHECK(c.training.optimizer.weight_decay == 5e-4);
  CHECK(goyal_lr(c) == doctest::Approx(0.05));
  CHECK(to_string(c.training.schedule.kind) == "cosine");
  CHECK(c.training.schedule.warmup_epochs == 0.5);
  CHECK(c.runtime.mode == runtime_mode::async);  // the main job runs on the actor runtime
  CHECK(c.runtime.threads == 2);
}

TEST_CASE("backprop preset is the default with method backprop, and nothing else changed") {
  run_config petra = load_config("default");
  const run_config backprop = load_config("backprop");
  CHECK(backprop.training.method == training_method::backprop);
  petra.training.method = training_method::backprop;
  CHECK(to_yaml(petra) == to_yaml(backprop));
}

TEST_CASE("revnet18_cifar10 preset is the paper's recipe") {
  const run_config c = load_config("revnet18_cifar10");
  CHECK(to_string(c.model.arch) == "revnet18");
  CHECK(c.model.input == std::vector<int>{3, 32, 32});
  CHECK(to_string(c.data.dataset) == "cifar10");
  CHECK(c.data.path == "/usr/share/datasets/cifar10");
  CHECK(c.data.mean == std::vector<float>{0.4914f, 0.4822f, 0.4465f});
  CHECK(c.data.std == std::vector<float>{0.2023f, 0.1994f, 0.2010f});
  CHECK(c.data.crop_padding == 4);
  CHECK(c.data.flip);
  CHECK(c.training.method == training_method::petra);
  CHECK(c.training.epochs == 300);
  CHECK(c.training.micro_batch == 64);
  CHECK(c.training.accumulation == 2);
  CHECK(c.training.optimizer.base_lr == 0.1);
  CHECK(c.training.optimizer.nesterov);
  CHECK(c.training.optimizer.momentum == 0.9);
  CHECK(c.training.optimizer.weight_decay == 5e-4);
  CHECK(to_string(c.training.schedule.kind) == "step");
  CHECK(c.training.schedule.warmup_epochs == 5);
  CHECK(c.training.schedule.milestones == std::vector<double>{150, 225});
  CHECK(c.training.schedule.gamma == 0.1);
}

TEST_CASE("revnet18_imagenet32 preset is the paper's ImageNet32 recipe") {
  const run_config c = load_config("revnet18_imagenet32");
  CHECK(to_string(c.model.arch) == "revnet18");
  CHECK(c.model.num_classes == 1000);
  CHECK(c.model.input == std::vector<int>{3, 32, 32});
  CHECK(to_string(c.model.stem) == "cifar");
  CHECK(to_string(c.data.dataset) == "imagenet32");
  CHECK(c.data.mean == std::vector<float>{0.485f, 0.456f, 0.406f});
  CHECK(c.data.std == std::vector<float>{0.229f, 0.224f, 0.225f});
  CHECK(c.data.crop_padding == 4);
  CHECK(c.data.flip);
  CHECK(c.training.method == training_method::petra);
  CHECK(c.training.epochs == 90);
  CHECK(c.training.micro_batch == 64);
  CHECK(c.training.accumulation == 2);
  CHECK(goyal_lr(c) == doctest::Approx(0.05));
  CHECK(c.training.optimizer.nesterov);
  CHECK(c.training.optimizer.momentum == 0.9);
  CHECK(c.training.optimizer.weight_decay == 1e-4);
  CHECK(to_string(c.training.schedule.kind) == "step");
  CHECK(c.training.schedule.warmup_epochs == 5);
  CHECK(c.training.schedule.milestones == std::vector<double>{30, 60, 80});
  CHECK(c.training.schedule.gamma == 0.1);
  // data.path is the one thing a user sets: overriding it alone gives a valid config.
  CHECK(load_config("revnet18_imagenet32", {"data.path=/elsewhere"}).data.path == "/elsewhere");
}

TEST_CASE("revnet50_imagenet preset is the paper's ImageNet recipe") {
  const run_config c = load_config("revnet50_imagenet");
  CHECK(to_string(c.model.arch) == "revnet50");
  CHECK(c.model.num_classes == 1000);
  CHECK(c.model.input == std::vector<int>{3, 224, 224});
  CHECK(to_string(c.model.stem) == "imagenet");
  CHECK(to_string(c.data.dataset) == "imagenet");
  CHECK(c.data.mean == std::vector<float>{0.485f, 0.456f, 0.406f});
  CHECK(c.data.std == std::vector<float>{0.229f, 0.224f, 0.225f});
  CHECK(c.data.crop_size == 224);
  CHECK(c.data.resize_size == 256);
  CHECK(c.data.flip);
  CHECK(to_string(c.data.on_bad_image) == "skip");
  CHECK(c.data.workers >= 2);  // JPEG decoding needs several cores to feed a GPU
  CHECK(c.training.method == training_method::petra);
  CHECK(c.training.epochs == 90);
  CHECK(c.training.micro_batch == 64);
  CHECK(c.training.accumulation == 4);
  CHECK(goyal_lr(c) == doctest::Approx(0.1));
  CHECK(c.training.optimizer.weight_decay == 1e-4);
  CHECK(to_string(c.training.schedule.kind) == "step");
  CHECK(c.training.schedule.warmup_epochs == 5);
  CHECK(c.training.schedule.milestones == std::vector<double>{30, 60, 80});
  CHECK(load_config("revnet50_imagenet", {"data.path=/data/imagenet"}).data.path == "/data/imagenet");
}

TEST_CASE("ci_smoke and tiny presets are small") {
  const run_config smoke = load_config("ci_smoke");
  CHECK(to_string(smoke.model.arch) == "tiny");
  CHECK(to_string(smoke.data.dataset) == "fashion-mnist");
  CHECK(smoke.data.train_limit == 1024);
  CHECK(smoke.data.test_limit == 512);
  CHECK(smoke.training.epochs == 1);
  CHECK(smoke.training.micro_batch == 32);
  CHECK(smoke.training.accumulation == 1);
  CHECK(smoke.training.method == training_method::petra);

  const run_config tiny = load_config("tiny");
  CHECK(to_string(tiny.model.arch) == "tiny");
  CHECK(tiny.data.train_limit > 0);
}

TEST_CASE("PETRA_PRESETS replaces the presets directory") {
  const char* outer = std::getenv("PETRA_PRESETS");
  const std::string saved = outer != nullptr ? outer : "";
  setenv("PETRA_PRESETS", "/nonexistent/presets", 1);
  CHECK(presets_dir() == "/nonexistent/presets");
  bool threw = false;
  try {
    load_config("default");
  } catch (const config_error& e) {
    threw = true;
    CHECK(std::string(e.what()).find("no preset of that name in /nonexistent/presets") != std::string::npos);
  }
  CHECK(threw);
  if (outer != nullptr)
    setenv("PETRA_PRESETS", saved.c_str(), 1);
  else
    unsetenv("PETRA_PRESETS");
}

// Every kind of bad config is a config_error whose message names the YAML path and file:line.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using namespace petra::config::testing;

TEST_CASE("unknown keys name the key, the file:line, a likely fix and the known keys") {
  const std::string top = error_of("model:\n  arch: tiny\ntrainng:\n  epochs: 3\n");
  CHECK(contains(top, "unknown key 'trainng' at top level of runs/x.yaml:3"));
  CHECK(contains(top, "did you mean 'training'?"));
  CHECK(contains(top, "known keys: model, data, training, pipeline, runtime, tls, faults, output"));

  const std::string nested =
      error_of("training:\n  method: petra\n  optimizer:\n    momentum: 0.9\n    nestrov: true\n");
  CHECK(contains(nested, "unknown key 'training.optimizer.nestrov' at runs/x.yaml:5"));
  CHECK(contains(nested, "did you mean 'nesterov'?"));
  CHECK(contains(nested, "kind, base_lr, momentum, nesterov, betas, eps, weight_decay"));
}

TEST_CASE("wrong types name the path, the line, what was expected and what was found") {
  CHECK(contains(error_of("model:\n  arch: tiny\ntraining:\n  method: petra\n  epochs: three\n"),
                 "training.epochs at runs/x.yaml:5: expected an integer, got 'three'"));
  CHECK(contains(error_of("training:\n  epochs: 2.5\n"),
                 "training.epochs at runs/x.yaml:2: expected an integer"));
  CHECK(contains(error_of("data:\n  flip: maybe\n"), "data.flip at runs/x.yaml:2: expected true or false"));
  CHECK(contains(error_of("training:\n  optimizer:\n    base_lr: fast\n"),
                 "training.optimizer.base_lr at runs/x.yaml:3: expected a number, got 'fast'"));
  CHECK(contains(error_of("training:\n  seed: -1\n"),
                 "training.seed at runs/x.yaml:2: expected a non-negative integer"));
  CHECK(contains(error_of("model:\n  input: 28\n"),
                 "model.input at runs/x.yaml:2: expected a list of integers"));
  CHECK(contains(error_of("model:\n  input:\n    - 1\n    - x\n    - 28\n"),
                 "model.input[1] at runs/x.yaml:4: expected an integer, got 'x'"));
  CHECK(contains(error_of("model:\n  arch: [tiny]\n"),
                 "model.arch at runs/x.yaml:2: expected a string, got a list"));
  CHECK(contains(error_of("model:\n  arch: tiny\ntraining: 3\n"),
                 "training at runs/x.yaml:3: expected a mapping"));
  CHECK(contains(error_of("training:\n  epochs:\n"),
                 "training.epochs at runs/x.yaml:2: expected an integer, got nothing"));
  CHECK(contains(error_of("- model\n- data\n"), "runs/x.yaml:1: expected a mapping of sections"));
  CHECK(contains(error_of("training:\n  epochs: 99999999999\n"), "training.epochs at runs/x.yaml:2"));
}

TEST_CASE("bad values name the path, the line and the accepted values") {
  CHECK(contains(
      error_of("model:\n  arch: tiny\ndata: {}\ntraining:\n  method: petraa\n"),
      "training.method at runs/x.yaml:5: 'petraa' is not one of backprop, delayed, petra, forward_gradient"));

  struct bad_value {
    std::string yaml;
    std::string where;  // the expected "path at file:line"
  };
  const std::vector<bad_value> cases = {
      {"training:\n  epochs: 0\n", "training.epochs at runs/x.yaml:2"},
      {"training:\n  micro_batch: -4\n", "training.micro_batch at runs/x.yaml:2"},
      {"training:\n  accumulation: 0\n", "training.accumulation at runs/x.yaml:2"},
      {"training:\n  optimizer:\n    base_lr: -0.1\n", "training.optimizer.base_lr at runs/x.yaml:3"},
      {"training:\n  optimizer:\n    momentum: 1.0\n", "training.optimizer.momentum at runs/x.yaml:3"},
      {"training:\n  optimizer:\n    momentum: -0.5\n", "training.optimizer.momentum at runs/x.yaml:3"},
      {"training:\n  optimizer:\n    weight_decay: -1e-4\n",
       "training.optimizer.weight_decay at runs/x.yaml:3"},
      {"training:\n  schedule:\n    kind: linear\n", "training.schedule.kind at runs/x.yaml:3"},
      {"training:\n  schedule:\n    warmup_epochs: -1\n", "training.schedule.warmup_epochs at runs/x.yaml:3"},
      {"training:\n  schedule:\n    milestones: [225, 150]\n",
       "training.schedule.milestones at runs/x.yaml:3"},
      {"training:\n  schedule:\n    milestones: [150, 150]\n",
       "training.schedule.milestones at runs/x.yaml:3"},
      {"training:\n  schedule:\n    gamma: 0\n", "training.schedule.gamma at runs/x.yaml:3"},
      {"data:\n  dataset: imagenet21k\n", "data.dataset at runs/x.yaml:2"},
      {"data:\n  workers: -1\n", "data.workers at runs/x.yaml:2"},
      {"data:\n  on_bad_image: ignore\n", "data.on_bad_image at runs/x.yaml:2"},
      {"data:\n  crop_size: 0\n", "data.crop_size at runs/x.yaml:2"},
      {"data:\n  resize_size: 200\n", "data.resize_size at runs/x.yaml:2"},
      {"data:\n  mean: []\n", "data.mean at runs/x.yaml:2"},
      {"data:\n  std: [0.1, 0.2]\n", "data.std at runs/x.yaml:2"},
      {"data:\n  std: [0]\n", "data.std at runs/x.yaml:2"},
      {"data:\n  path: ''\n", "data.path at runs/x.yaml:2"},
      {"data:\n  crop_padding: -1\n", "data.crop_padding at runs/x.yaml:2"},
      {"data:\n  train_limit: -1\n", "data.train_limit at runs/x.yaml:2"},
      {"model:\n  arch: resnet18\n", "model.arch at runs/x.yaml:2"},
      {"model:\n  num_classes: 0\n", "model.num_classes at runs/x.yaml:2"},
      {"model:\n  stem: tiny\n", "model.stem at runs/x.yaml:2"},
      {"model:\n  block: coupling\n", "model.block at runs/x.yaml:2"},
      {"model:\n  input: [28, 28]\n", "model.input at runs/x.yaml:2"},
      {"model:\n  input: [1, 0, 28]\n", "model.input at runs/x.yaml:2"},
      {"model:\n  input: [3, 32, 32]\n", "model.input at runs/x.yaml:2"},  // fashion-mnist has 1 channel
      {"model:\n  stem_width: -8\n", "model.stem_width at runs/x.yaml:2"},
      {"model:\n  widths: [16, 0]\n", "model.widths at runs/x.yaml:2"},
      {"model:\n  widths: [16, 32]\n  blocks: [1, 1, 1]\n", "model.blocks at runs/x.yaml:3"},
      {"pipeline:\n  stage_blocks: [2, 0]\n", "pipeline.stage_blocks at runs/x.yaml:2"},
      {"pipeline:\n  devices: [cpu, gpu0]\n", "pipeline.devices at runs/x.yaml:2"},
      {"pipeline:\n  devices: ['cuda:']\n", "pipeline.devices at runs/x.yaml:2"},
      {"pipeline:\n  devices: [cuda:x]\n", "pipeline.devices at runs/x.yaml:2"},
      {"pipeline:\n  stage_blocks: [4, 4]\n  devices: [cpu]\n", "pipeline.devices at runs/x.yaml:3"},
      {"runtime:\n  mode: threads\n", "runtime.mode at runs/x.yaml:2"},
      {"runtime:\n  threads: 0\n", "runtime.threads at runs/x.yaml:2"},
      {"runtime:\n  inversion_sample_every: -1\n", "runtime.inversion_sample_every at runs/x.yaml:2"},
      {"runtime:\n  heartbeat_timeout: 0\n", "runtime.heartbeat_timeout at runs/x.yaml:2"},
      {"runtime:\n  overlap_rebuild_threads: -1\n", "runtime.overlap_rebuild_threads at runs/x.yaml:2"},
      {"runtime:\n  heartbeat_timeout: -2.5\n", "runtime.heartbeat_timeout at runs/x.yaml:2: got -2.5"},
      {"runtime:\n  heartbeat_timeout: soon\n", "runtime.heartbeat_timeout at runs/x.yaml:2"},
      {"output:\n  dir: ''\n", "output.dir at runs/x.yaml:2"},
      {"output:\n  name: a/b\n", "output.name at runs/x.yaml:2"},
      {"output:\n  checkpoint_every_steps: -5\n", "output.checkpoint_every_steps at runs/x.yaml:2"},
  };
  for (const bad_value& c : cases) {
    CAPTURE(c.yaml);
    CHECK(contains(error_of(c.yaml), c.where));
  }
}

TEST_CASE("imagenet and imagenet32: three channels, the crop size is the input size, and the loader keys") {
  const std::string rgb =
      "model:\n  input: [3, 224, 224]\ndata:\n  mean: [0.5, 0.5, 0.5]\n  std: [0.2, 0.2, 0.2]\n";
  CHECK_NOTHROW(parse_config(rgb + "  dataset: imagenet\n", "x"));
  CHECK_NOTHROW(
      parse_config("model:\n  input: [3, 32, 32]\ndata:\n  dataset: imagenet32\n  mean: [0.5, 0.5, 0.5]\n  "
                   "std: [0.2, 0.2, 0.2]\n",
                   "x"));
  const std::string gray = error_of("data:\n  dataset: imagenet32\n");
  CHECK(contains(
      gray,
      "model.input (default): has 1 channels but imagenet32 (data.dataset at runs/x.yaml:2) images have 3"));
  const std::string size = error_of(rgb + "  dataset: imagenet\n  crop_size: 192\n");
  CHECK(contains(
      size,
      "model.input at runs/x.yaml:2: is 3×224×224 but imagenet images are cropped to data.crop_size at "
      "runs/x.yaml:7 = 192"));
  CHECK(contains(size, "[3, 192, 192]"));
  const std::string resize = error_of(rgb + "  dataset: imagenet\n  resize_size: 200\n");
  CHECK(contains(resize, "data.resize_size at runs/x.yaml:7: got 200 but data.crop_size (default) is 224"));
  CHECK(contains(error_of("data:\n  workers: -2\n"), "data.workers at runs/x.yaml:2: got -2"));
  CHECK(contains(error_of("data:\n  on_bad_image: warn\n"),
                 "data.on_bad_image at runs/x.yaml:2: 'warn' is not one of skip, fail"));
  CHECK(contains(error_of("runtime:\n  pacing: credits\n"),
                 "runtime.pacing at runs/x.yaml:2: 'credits' is not one of stages, loader"));
  CHECK(run_config{}.runtime.pacing == async_pacing::stages);
  CHECK(contains(
      error_of("training:\n  tick_order: backward\n"),
      "training.tick_order at runs/x.yaml:2: 'backward' is not one of forward_first, backward_first"));
  CHECK(run_config{}.training.tick_order == tick_order::forward_first);
  const run_config c = parse_config(rgb + "  dataset: imagenet\n  workers: 0\n  on_bad_image: fail\n", "x");
  CHECK(c.data.workers == 0);
  CHECK(c.data.on_bad_image == bad_image_policy::fail);
  CHECK(run_config{}.data.workers == 1);
  CHECK(run_config{}.data.on_bad_image == bad_image_policy::skip);
}

TEST_CASE("stash switches are errors outside the delayed method, and say why") {
  const std::string inputs = error_of("training:\n  method: petra\n  stash_inputs: true\n");
  CHECK(contains(inputs, "training.stash_inputs at runs/x.yaml:3"));
  CHECK(contains(inputs, "training.method is 'petra' at runs/x.yaml:2"));
  CHECK(contains(inputs, "delayed"));
  CHECK(contains(error_of("training:\n  method: backprop\n  stash_weights: true\n"),
                 "training.stash_weights at runs/x.yaml:3"));
  CHECK(contains(error_of("training:\n  stash_weights: true\n"), "training.method is 'petra' (default)"));
  CHECK_NOTHROW(
      parse_config("training:\n  method: delayed\n  stash_inputs: true\n  stash_weights: true\n", "x"));
  CHECK_NOTHROW(parse_config("training:\n  method: petra\n  stash_inputs: false\n", "x"));
}

TEST_CASE("training.forward_gradient keys are errors outside the forward_gradient method, and say where") {
  for (const char* key : {"guess: random", "target: local", "aux_width: 8"}) {
    CAPTURE(key);
    const std::string name = std::string(key).substr(0, std::string(key).find(':'));
    const std::string error =
        error_of(std::string("training:\n  method: petra\n  forward_gradient:\n    ") + key + "\n");
    CHECK(contains(error, "training.forward_gradient." + name + " at runs/x.yaml:4"));
    CHECK(contains(error, "training.method is 'petra' at runs/x.yaml:2"));
    CHECK(contains(error, "forward_gradient"));
  }
  CHECK(contains(error_of("training:\n  forward_gradient: {guess: local}\n"),
                 "training.method is 'petra' (default)"));  // even the default value, when written
  CHECK(contains(error_of("training:\n  method: forward_gradient\n  forward_gradient: {guess: both}\n"),
                 "'both' is not one of local, random"));
  CHECK(contains(error_of("training:\n  method: forward_gradient\n  forward_gradient: {target: far}\n"),
                 "'far' is not one of global, local"));
  CHECK(contains(error_of("training:\n  method: forward_gradient\n  forward_gradient: {aux_width: 0}\n"),
                 "training.forward_gradient.aux_width at runs/x.yaml:3: got 0"));
  const run_config c = parse_config(
      "training:\n  method: forward_gradient\n  forward_gradient: {guess: random, target: local, aux_width: "
      "8}\n",
      "x");
  CHECK(c.training.method == training_method::forward_gradient);
  CHECK(c.training.forward_gradient.guess == gradient_guess::random);
  CHECK(c.training.forward_gradient.target == gradient_target::local);
  CHECK(c.training.forward_gradient.aux_width == 8);
  const forward_gradient_config defaults;
  CHECK(defaults.guess == gradient_guess::local);
  CHECK(defaults.target == gradient_target::global);
  CHECK(defaults.aux_width == 32);
}

TEST_CASE("empty documents, syntax errors and duplicate keys are reported with file:line") {
  CHECK(contains(error_of(""), "runs/x.yaml:1: the config is empty"));
  CHECK(contains(error_of("# only a comment\n"), "runs/x.yaml:1: the config is empty"));
  // an unclosed list is found at the end of the text (line 4), where yaml-cpp gives up
  CHECK(contains(error_of("model:\n  arch: tiny\n  input: [1, 28\n"), "runs/x.yaml:4: YAML syntax error"));
  CHECK(contains(error_of("training:\n  epochs: 3\n    micro_batch: 4\n"), "runs/x.yaml:3"));
  CHECK(contains(error_of("training:\n  epochs: 3\n  epochs: 4\n"),
                 "training.epochs at runs/x.yaml:3: duplicate key"));
  CHECK(contains(error_of("training: {epochs: 3}\n---\ntraining: {epochs: 4}\n"), "runs/x.yaml:3"));
}

TEST_CASE("a stray closing bracket is an error, not an endless stream of documents") {
  // yaml-cpp's LoadAll loops on these until memory runs out (found by tests/fuzz, config target)
  CHECK(contains(error_of("]\n"), "runs/x.yaml:1"));
  CHECK(contains(error_of("}"), "runs/x.yaml:1"));
  CHECK(contains(error_of("training: {epochs: 3}\n]\n"), "runs/x.yaml:2"));
}

TEST_CASE("a good config with sections left out keeps every default") {
  const run_config c = parse_config("training:\n  epochs: 7\nmodel:\n", "x");
  CHECK(c.training.epochs == 7);
  CHECK(c.training.micro_batch == run_config{}.training.micro_batch);
  CHECK(c.model.arch == run_config{}.model.arch);
  CHECK(parse_config("{}", "x").training.epochs == run_config{}.training.epochs);
}

// to_yaml writes every field so that parse_config reads back the identical config, bit for bit.
#include <doctest/doctest.h>

#include <filesystem>

#include "config/config.hpp"

using namespace petra::config;

namespace {

// Every field, listed independently of the loader's own table.
void check_same(const run_config& a, const run_config& b) {
  CHECK(a.model.arch == b.model.arch);
  CHECK(a.model.num_classes == b.model.num_classes);
  CHECK(a.model.input == b.model.input);
  CHECK(a.model.stem == b.model.stem);
  CHECK(a.model.block == b.model.block);
  CHECK(a.model.stem_width == b.model.stem_width);
  CHECK(a.model.widths == b.model.widths);
  CHECK(a.model.hidden == b.model.hidden);
  CHECK(a.model.blocks == b.model.blocks);
  CHECK(a.model.depth == b.model.depth);
  CHECK(a.model.width == b.model.width);
  CHECK(a.model.heads == b.model.heads);
  CHECK(a.model.patch == b.model.patch);
  CHECK(a.model.mlp_ratio == b.model.mlp_ratio);

  CHECK(a.data.dataset == b.data.dataset);
  CHECK(a.data.path == b.data.path);
  CHECK(a.data.mean == b.data.mean);  // exact float equality
  CHECK(a.data.std == b.data.std);
  CHECK(a.data.crop_padding == b.data.crop_padding);
  CHECK(a.data.flip == b.data.flip);
  CHECK(a.data.train_limit == b.data.train_limit);
  CHECK(a.data.test_limit == b.data.test_limit);

  CHECK(a.training.method == b.training.method);
  CHECK(a.training.stash_inputs == b.training.stash_inputs);
  CHECK(a.training.stash_weights == b.training.stash_weights);
  CHECK(a.training.epochs == b.training.epochs);
  CHECK(a.training.micro_batch == b.training.micro_batch);
  CHECK(a.training.accumulation == b.training.accumulation);
  CHECK(a.training.seed == b.training.seed);
  CHECK(a.training.max_inversion_error == b.training.max_inversion_error);
  CHECK(a.training.optimizer.base_lr == b.training.optimizer.base_lr);
  CHECK(a.training.optimizer.momentum == b.training.optimizer.momentum);
  CHECK(a.training.optimizer.nesterov == b.training.optimizer.nesterov);
  CHECK(a.training.optimizer.weight_decay == b.training.optimizer.weight_decay);
  CHECK(a.training.schedule.kind == b.training.schedule.kind);
  CHECK(a.training.schedule.warmup_epochs == b.training.schedule.warmup_epochs);
  CHECK(a.training.schedule.milestones == b.training.schedule.milestones);
  CHECK(a.training.schedule.gamma == b.training.schedule.gamma);
  CHECK(a.training.forward_gradient.guess == b.training.forward_gradient.guess);
  CHECK(a.training.forward_gradient.target == b.training.forward_gradient.target);
  CHECK(a.training.forward_gradient.aux_width == b.training.forward_gradient.aux_width);

  CHECK(a.pipeline.stage_blocks == b.pipeline.stage_blocks);
  CHECK(a.pipeline.devices == b.pipeline.devices);

  CHECK(a.runtime.mode == b.runtime.mode);
  CHECK(a.runtime.threads == b.runtime.threads);
  CHECK(a.runtime.inversion_sample_every == b.runtime.inversion_sample_every);
  CHECK(a.runtime.overlap_rebuild == b.runtime.overlap_rebuild);
  CHECK(a.runtime.overlap_rebuild_threads == b.runtime.overlap_rebuild_threads);
  CHECK(a.runtime.heartbeat_timeout == b.runtime.heartbeat_timeout);
  CHECK(a.runtime.cudnn_search == b.runtime.cudnn_search);
  CHECK(a.runtime.cudnn_algorithms == b.runtime.cudnn_algorithms);

  CHECK(a.output.dir == b.output.dir);
  CHECK(a.output.name == b.output.name);
  CHECK(a.output.checkpoint_every_steps == b.output.checkpoint_every_steps);
  CHECK(a.output.progress == b.output.progress);
}

void check_round_trip(const run_config& config) {
  const std::string yaml = to_yaml(config);
  CAPTURE(yaml);
  const run_config again = parse_config(yaml, "to_yaml");
  check_same(config, again);
  CHECK(to_yaml(again) == yaml);
}

// A valid config in which every field differs from its default, with awkward values.
run_config everything_changed() {
  run_config c;
  c.model = {model_arch::revnet50, 1000,      {3, 224, 224}, stem_kind::imagenet, block_kind::bottleneck, 64,
             {256, 512},           {64, 128}, {3, 4}};
  c.data.dataset = dataset_kind::cifar10;
  c.data.path = "/data/my cifar: \"v2\" #1/é";
  c.data.mean = {0.1f, 1.0f / 3.0f, 1e-7f};
  c.data.std = {0.2023f, 3.4e38f, 1.17549435e-38f};
  c.data.crop_padding = 0;
  c.data.flip = false;
  c.data.train_limit = 50000000000LL;
  c.data.test_limit = 7;
  c.training.method = training_method::delayed;
  c.training.stash_inputs = true;
  c.training.stash_weights = true;
  c.training.epochs = 2147483647;
  c.training.micro_batch = 1;
  c.training.accumulation = 16;
  c.training.seed = 18446744073709551615ULL;
  c.training.optimizer = {optimizer_kind::sgd, 0.1 + 0.2, 0.0, false, {0.9, 0.999}, 1e-8, 1e-300};
  c.training.schedule = {lr_schedule::step, 1.0 / 3.0, {0.5, 1.0 / 3.0 + 1, 225}, 0.3};
  c.pipeline.stage_blocks = {1, 2, 3};
  c.pipeline.devices = {parse_device("cpu"), parse_device("cuda:0"), parse_device("sim:12")};
  c.runtime.threads = 16;
  c.runtime.inversion_sample_every = 0;
  c.runtime.overlap_rebuild = !runtime_config{}.overlap_rebuild;
  c.runtime.overlap_rebuild_threads = 3;
  c.runtime.heartbeat_timeout = 0.1 + 0.2;  // a fraction of a second, not a round decimal
  c.runtime.cudnn_search = cudnn_search_mode::timed;
  c.runtime.cudnn_algorithms = "runs/a run/cudnn_algorithms.json";
  c.output.dir = "";  // reset below: dir must be non-empty
  c.output.dir = " runs with spaces ";
  c.output.name = "true";  // a string that YAML would read as a bool if unquoted
  c.output.checkpoint_every_steps = 100;
  c.output.progress = false;
  return c;
}

}  // namespace

TEST_CASE("round trip: the default config") { check_round_trip(run_config{}); }

TEST_CASE("round trip: every field changed, awkward strings and floats") {
  run_config c = everything_changed();
  check_round_trip(c);
  for (const char* name : {"", "null", "~", "123", "x: y", "a #b", "tab\there", "new\nline", "back\\slash",
                           "colon:", "- dash", "[list]", "'single'", "Yes", "é"}) {
    CAPTURE(name);
    c.model.stem = stem_kind::preset;
    c.output.name = name;
    check_round_trip(c);
  }
}

TEST_CASE("round trip: a revvit config, its keys beside the RevNet keys' empty values") {
  run_config c;
  c.model.arch = model_arch::revvit;
  c.model.input = {1, 28, 28};
  c.model.depth = 7;
  c.model.width = 96;
  c.model.heads = 3;
  c.model.patch = 7;
  c.model.mlp_ratio = 1.0 / 3.0 + 2;  // not a round decimal
  check_round_trip(c);
}

TEST_CASE("round trip: forward_gradient writes its own section, and only that method does") {
  run_config c;
  c.training.method = training_method::forward_gradient;
  c.training.forward_gradient = {gradient_guess::random, gradient_target::local, 7};
  check_round_trip(c);
  CHECK(to_yaml(c).find("\n  forward_gradient:\n    guess: random\n    target: local\n    aux_width: 7\n") !=
        std::string::npos);
  // Another method's config leaves the section out, so that reading it back is not refused.
  c.training.method = training_method::petra;
  CHECK(to_yaml(c).find("forward_gradient") == std::string::npos);
  CHECK_NOTHROW(parse_config(to_yaml(c), "to_yaml"));
}

TEST_CASE("round trip: every preset") {
  for (const auto& entry : std::filesystem::directory_iterator(presets_dir())) {
    if (entry.path().extension() != ".yaml") continue;
    CAPTURE(entry.path().string());
    check_round_trip(load_config(entry.path().string()));
  }
}

TEST_CASE("to_yaml names every section and key") {
  const std::string yaml = to_yaml(run_config{});
  for (const std::string line :
       {"\nmodel:\n", "\ndata:\n", "\ntraining:\n", "\n  optimizer:\n", "\n  schedule:\n", "\npipeline:\n",
        "\nruntime:\n", "\noutput:\n", "\n  arch: fashion_small\n", "\n  widths: []\n",
        "\n  input: [1, 28, 28]\n", "\n  mean: [0.286]\n", "\n    weight_decay: ", "\n  stem: \"\"\n",
        "\n  seed: 0\n"}) {
    CAPTURE(line);
    CHECK(yaml.find(line) != std::string::npos);
  }
}

// --set path=value overrides: the value is YAML, checked like a file's, and an unknown path is an error.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using petra::config::testing::contains;

namespace {

std::string override_error_of(const std::vector<std::string>& overrides) {
  try {
    load_config("default", overrides);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("overrides set scalars, nested keys and lists") {
  const run_config c = load_config(
      "default", {"training.epochs=10", "training.optimizer.base_lr=0.2", "training.schedule.kind=step",
                  "training.schedule.milestones=[2, 5]", "pipeline.devices=[cpu, cuda:0]",
                  "pipeline.stage_blocks=[4,4]", "data.flip=false", "output.name=", "training.seed=42"});
  CHECK(c.training.epochs == 10);
  CHECK(c.training.optimizer.base_lr == 0.2);
  CHECK(c.training.schedule.kind == lr_schedule::step);
  CHECK(c.training.schedule.milestones == std::vector<double>{2, 5});
  CHECK(c.pipeline.devices == std::vector<device_spec>{parse_device("cpu"), parse_device("cuda:0")});
  CHECK(c.pipeline.stage_blocks == std::vector<int>{4, 4});
  CHECK_FALSE(c.data.flip);
  CHECK(c.output.name.empty());
  CHECK(c.training.seed == 42);
  // untouched fields keep the preset's values
  CHECK(c.training.micro_batch == 64);
  CHECK(c.model.widths == std::vector<int>{16, 32, 64});
}

TEST_CASE("overrides apply in order and after the file, and a whole section can be given as a mapping") {
  CHECK(load_config("default", {"training.epochs=4", "training.epochs=5"}).training.epochs == 5);
  const run_config c = load_config("default", {"training.optimizer={base_lr: 0.4, nesterov: false}"});
  CHECK(c.training.optimizer.base_lr == 0.4);
  CHECK_FALSE(c.training.optimizer.nesterov);
  CHECK(c.training.optimizer.momentum == 0.9);
  // switching to the delayed method and its stash switches together is valid
  CHECK(load_config("default", {"training.method=delayed", "training.stash_inputs=true"})
            .training.stash_inputs);
}

TEST_CASE("an override's value is validated like a file's and named by its --set") {
  CHECK(contains(override_error_of({"training.epochs=three"}),
                 "training.epochs in --set training.epochs=three: expected an integer, got 'three'"));
  CHECK(contains(override_error_of({"training.epochs=0"}), "training.epochs in --set training.epochs=0"));
  CHECK(contains(
      override_error_of({"runtime.heartbeat_timeout=0"}),
      "runtime.heartbeat_timeout in --set runtime.heartbeat_timeout=0: got 0; seconds a remote node"));
  CHECK(contains(override_error_of({"training.method=petraa"}),
                 "training.method in --set training.method=petraa: 'petraa' is not one of backprop, delayed, "
                 "petra, forward_gradient"));
  CHECK(contains(override_error_of({"model.input=[1, x, 28]"}),
                 "model.input[1] in --set model.input=[1, x, 28]"));
  CHECK(contains(override_error_of({"training.schedule.milestones=5"}), "expected a list of numbers"));
  CHECK(contains(override_error_of({"training.stash_weights=true"}),
                 "training.stash_weights in --set training.stash_weights=true"));
  CHECK(contains(override_error_of({"training.epochs=[1"}),
                 "training.epochs in --set training.epochs=[1: the value is not valid YAML"));
}

TEST_CASE("forward_gradient keys by --set: taken with the method, refused without it, naming the --set") {
  const run_config fg =
      load_config("ci_smoke", {"training.method=forward_gradient", "training.forward_gradient.guess=random",
                               "training.forward_gradient.aux_width=16"});
  CHECK(fg.training.forward_gradient.guess == gradient_guess::random);
  CHECK(fg.training.forward_gradient.target == gradient_target::global);
  CHECK(fg.training.forward_gradient.aux_width == 16);
  const std::string refused = override_error_of({"training.forward_gradient.target=local"});
  CHECK(
      contains(refused, "training.forward_gradient.target in --set training.forward_gradient.target=local"));
  CHECK(contains(refused, "training.method is 'petra' at "));  // the default preset's own line
}

TEST_CASE("unknown override paths are errors naming the path and the --set") {
  const std::string typo = override_error_of({"training.epcohs=10"});
  CHECK(contains(typo, "unknown key 'training.epcohs' in --set training.epcohs=10"));
  CHECK(contains(typo, "did you mean 'epochs'?"));
  CHECK(contains(override_error_of({"trainng.epochs=10"}),
                 "unknown key 'trainng' at top level in --set trainng.epochs=10"));
  CHECK(contains(override_error_of({"training.epochs.max=10"}),
                 "training.epochs in --set training.epochs.max=10: is a value"));
  CHECK(contains(override_error_of({"training.epochs"}), "expected path=value"));
  CHECK(contains(override_error_of({"=10"}), "expected path=value"));
  CHECK(contains(override_error_of({"training..epochs=3"}), "--set training..epochs=3"));
  CHECK(contains(override_error_of({"training.=3"}), "--set training.=3"));
}

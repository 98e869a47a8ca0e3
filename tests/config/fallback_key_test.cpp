// training.max_inversion_error: off by default, validated with messages that say what to change,
// and written back by to_yaml exactly.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using namespace petra::config::testing;

TEST_CASE("training.max_inversion_error: 0 (off) by default, any positive number on PETRA and delayed") {
  CHECK(run_config{}.training.max_inversion_error == 0);
  CHECK(load_config("default").training.max_inversion_error == 0);
  CHECK(parse_config("training:\n  max_inversion_error: 0.05\n", "x").training.max_inversion_error == 0.05);
  CHECK_NOTHROW(
      parse_config("training:\n  method: delayed\n  stash_weights: true\n  max_inversion_error: 1\n", "x"));
  CHECK_NOTHROW(parse_config("training:\n  method: backprop\n  max_inversion_error: 0\n", "x"));
}

TEST_CASE("training.max_inversion_error: bad values and combinations name the key, the line and the fix") {
  CHECK(contains(error_of("training:\n  max_inversion_error: -0.1\n"),
                 "training.max_inversion_error at runs/x.yaml:2: got -0.1; 0 turns the fallback off"));
  CHECK(contains(error_of("training:\n  max_inversion_error: high\n"),
                 "training.max_inversion_error at runs/x.yaml:2: expected a number, got 'high'"));
  const std::string backprop = error_of("training:\n  method: backprop\n  max_inversion_error: 0.1\n");
  CHECK(contains(backprop,
                 "training.max_inversion_error at runs/x.yaml:3: is set but training.method at "
                 "runs/x.yaml:2 is backprop"));
  const std::string stashed =
      error_of("training:\n  method: delayed\n  stash_inputs: true\n  max_inversion_error: 0.1\n");
  CHECK(contains(stashed,
                 "training.max_inversion_error at runs/x.yaml:4: is set but training.stash_inputs at "
                 "runs/x.yaml:3 keeps every stage's inputs already"));
  const std::string unsampled =
      error_of("training:\n  max_inversion_error: 0.1\nruntime:\n  inversion_sample_every: 0\n");
  CHECK(contains(unsampled, "runtime.inversion_sample_every at runs/x.yaml:4 is 0"));
  CHECK(contains(error_of("training:\n  epochs: 1\n", {"training.max_inversion_error=-1"}),
                 "training.max_inversion_error in --set training.max_inversion_error=-1: got -1"));
}

TEST_CASE("training.max_inversion_error: to_yaml writes it so that it reads back exactly") {
  run_config c;
  c.training.max_inversion_error = 0.1 + 0.2;  // not a short decimal
  const run_config again = parse_config(to_yaml(c), "to_yaml");
  CHECK(again.training.max_inversion_error == c.training.max_inversion_error);
  CHECK(to_yaml(again) == to_yaml(c));
  CHECK(parse_config(to_yaml(run_config{}), "to_yaml").training.max_inversion_error == 0);
}

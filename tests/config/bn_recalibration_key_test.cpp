// training.bn_recalibration: off by default, taken with drained epochs on a model with batch norm,
// refused with a message that says what to change otherwise, and written back by to_yaml.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using namespace petra::config::testing;

TEST_CASE("training.bn_recalibration: 0 (off) by default, micro-batches with drained epochs") {
  CHECK(run_config{}.training.bn_recalibration == 0);
  CHECK(load_config("default").training.bn_recalibration == 0);
  const run_config c = parse_config("training:\n  drain_at_epoch_end: true\n  bn_recalibration: 16\n", "x");
  CHECK(c.training.bn_recalibration == 16);
  CHECK(parse_config(to_yaml(c), "again").training.bn_recalibration == 16);
}

TEST_CASE("training.bn_recalibration: bad values and combinations name the key, the line and the fix") {
  CHECK(contains(error_of("training:\n  drain_at_epoch_end: true\n  bn_recalibration: -1\n"),
                 "training.bn_recalibration at runs/x.yaml:3: got -1; 0 turns it off"));
  CHECK(contains(error_of("training:\n  bn_recalibration: 8\n"),
                 "training.bn_recalibration at runs/x.yaml:2: is set but training.drain_at_epoch_end is "
                 "false (default)"));
  CHECK(contains(error_of("training:\n  epochs: 1\n", {"training.bn_recalibration=4"}),
                 "set drain_at_epoch_end: true, or remove this key"));
  CHECK(contains(
      error_of("model:\n  arch: revvit\ntraining:\n  drain_at_epoch_end: true\n  bn_recalibration: 8\n"),
      "training.bn_recalibration at runs/x.yaml:5: is set but model.arch is 'revvit' at "
      "runs/x.yaml:2, which has no batch norm"));
}

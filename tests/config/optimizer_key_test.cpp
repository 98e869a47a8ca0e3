// training.optimizer.kind: sgd by default, adamw with its betas and eps; each optimizer's own keys
// refused under the other (nothing set is ignored), bad values named with their line, and to_yaml
// writing only the chosen optimizer's keys (so that a run's config.yaml loads again).
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using namespace petra::config::testing;

TEST_CASE("training.optimizer.kind: sgd by default, adamw with betas and eps") {
  CHECK(run_config{}.training.optimizer.kind == optimizer_kind::sgd);
  const run_config c = parse_config(
      "training:\n  optimizer:\n    kind: adamw\n    base_lr: 0.002\n    betas: [0.8, 0.99]\n    eps: "
      "1.0e-6\n"
      "    weight_decay: 0.05\n",
      "x");
  CHECK(c.training.optimizer.kind == optimizer_kind::adamw);
  CHECK(c.training.optimizer.betas == std::vector<double>{0.8, 0.99});
  CHECK(c.training.optimizer.eps == 1e-6);
  const std::string yaml = to_yaml(c);
  CHECK(contains(yaml, "kind: adamw"));
  CHECK_FALSE(contains(yaml, "momentum:"));
  CHECK_FALSE(contains(yaml, "nesterov:"));
  const run_config again = parse_config(yaml, "again");
  CHECK(again.training.optimizer.kind == optimizer_kind::adamw);
  CHECK(again.training.optimizer.betas == c.training.optimizer.betas);
  CHECK(again.training.optimizer.eps == c.training.optimizer.eps);
  const std::string sgd_yaml = to_yaml(run_config{});
  CHECK(contains(sgd_yaml, "momentum: 0.9"));
  CHECK_FALSE(contains(sgd_yaml, "betas:"));
  CHECK_FALSE(contains(sgd_yaml, " eps:"));  // (trace_steps: holds "eps:")
}

TEST_CASE(
    "training.optimizer: the other optimizer's keys and bad values name the key, the line and the fix") {
  CHECK(
      contains(error_of("training:\n  optimizer:\n    kind: adamw\n    momentum: 0.9\n"),
               "training.optimizer.momentum at runs/x.yaml:4: is set but training.optimizer.kind is 'adamw' "
               "at runs/x.yaml:3; it is a setting of sgd: set kind to sgd, or remove this key"));
  CHECK(contains(
      error_of("training:\n  optimizer:\n    nesterov: false\n", {"training.optimizer.kind=adamw"}),
      "training.optimizer.nesterov at runs/x.yaml:3: is set but training.optimizer.kind is 'adamw'"));
  CHECK(contains(error_of("training:\n  optimizer:\n    betas: [0.9, 0.99]\n"),
                 "training.optimizer.betas at runs/x.yaml:3: is set but training.optimizer.kind is 'sgd' "
                 "(default); it is a setting of adamw: set kind to adamw, or remove this key"));
  CHECK(contains(error_of("training:\n  optimizer:\n    kind: sgd\n    eps: 1.0e-6\n"),
                 "training.optimizer.eps at runs/x.yaml:4: is set but training.optimizer.kind is 'sgd'"));
  CHECK(contains(error_of("training:\n  optimizer:\n    kind: adamw\n    betas: [0.9]\n"),
                 "training.optimizer.betas at runs/x.yaml:4: has 1 entries; it is [β1, β2]"));
  CHECK(contains(error_of("training:\n  optimizer:\n    kind: adamw\n    betas: [0.9, 1.0]\n"),
                 "training.optimizer.betas at runs/x.yaml:4: entry 1 is 1; each β must be in [0, 1)"));
  CHECK(contains(error_of("training:\n  optimizer:\n    kind: adamw\n    eps: 0\n"),
                 "training.optimizer.eps at runs/x.yaml:4: got 0; it must be positive"));
  CHECK(contains(error_of("training:\n  optimizer:\n    kind: adam\n"), "training.optimizer.kind"));
}

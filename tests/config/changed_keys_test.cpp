// changed_keys: which keys of two configs differ, each value as config.yaml writes it (what a
// resumed run records of its overrides).
#include <doctest/doctest.h>

#include "config/config.hpp"

using namespace petra::config;

TEST_CASE("changed keys: none for the same config, each differing key once with both values as written") {
  const run_config saved = load_config("ci_smoke");
  CHECK(changed_keys(saved, saved).empty());
  CHECK(changed_keys(saved, load_config("ci_smoke", {"training.micro_batch=32"})).empty());  // as it was

  const run_config changed =
      load_config("ci_smoke", {"training.epochs=3", "pipeline.devices=[cpu,sim:0,cpu,cpu,cpu]",
                               "training.optimizer.base_lr=0.05", "nodes.gpu1.address=127.0.0.1:7001"});
  const std::vector<key_change> changes = changed_keys(saved, changed);
  REQUIRE(changes.size() == 4);
  CHECK(changes[0].key == "training.epochs");  // in the layout's order
  CHECK(changes[0].before == "1");
  CHECK(changes[0].after == "3");
  CHECK(changes[1].key == "training.optimizer.base_lr");
  CHECK(changes[1].before == "0.1");
  CHECK(changes[1].after == "0.05");
  CHECK(changes[2].key == "pipeline.devices");
  CHECK(changes[2].before == "[]");
  CHECK(changes[2].after == "[cpu, sim:0, cpu, cpu, cpu]");
  CHECK(changes[3].key == "nodes");  // the named nodes as one value
  CHECK(changes[3].after.find("127.0.0.1:7001") != std::string::npos);
}

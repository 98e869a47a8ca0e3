// pipeline.migrate: none by default, entries parsed once into typed values (position, stage,
// target), bad entries named with their key, line and fix, and written back by to_yaml exactly.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using namespace petra::config::testing;

TEST_CASE("pipeline.migrate: empty by default, entries parse into (position, stage, target)") {
  CHECK(run_config{}.pipeline.migrate.empty());
  const run_config c = parse_config(
      "pipeline:\n  migrate: [\"32:3>sim:0\", \"64:1>cpu/2\", \"64:2>cuda:1@127.0.0.1:7001\"]\n", "x");
  REQUIRE(c.pipeline.migrate.size() == 3);
  CHECK(c.pipeline.migrate[0].position == 32);
  CHECK(c.pipeline.migrate[0].stage == 3);
  CHECK(c.pipeline.migrate[0].to.device == parse_device("sim:0"));
  CHECK(c.pipeline.migrate[0].to.threads == 0);
  CHECK(c.pipeline.migrate[0].to.node == "local");
  CHECK(c.pipeline.migrate[1].to.threads == 2);
  CHECK(c.pipeline.migrate[2].to.device == parse_device("cuda:1"));
  CHECK(c.pipeline.migrate[2].to.node == "127.0.0.1:7001");
  for (const char* text : {"32:3>sim:0", "64:1>cpu/2", "8:2>cuda:1/4@gpu1", "8:2>cpu@127.0.0.1:7001"})
    CHECK(parse_stage_migration(text).str() == text);
}

TEST_CASE("pipeline.migrate: bad entries name the key, the line, the entry and the fix") {
  CHECK(contains(error_of("pipeline:\n  migrate: [\"32-3>sim:0\"]\n"),
                 "pipeline.migrate at runs/x.yaml:2: entry 0 '32-3>sim:0' is not a migration: write "
                 "position:stage>target"));
  CHECK(contains(error_of("pipeline:\n  migrate: [\"32:0>cpu\"]\n"), "is not a migration"));
  CHECK(contains(error_of("pipeline:\n  migrate: [\"32:2>gpu:0\"]\n"),
                 "'gpu:0' is not a target: write DEVICE[/THREADS][@NODE]"));
  CHECK(contains(error_of("pipeline:\n  migrate: [\"32:2>cpu/0\"]\n"), "'cpu/0' is not a target"));
  CHECK(contains(error_of("pipeline:\n  migrate: [\"32:2>cpu@\"]\n"), "'cpu@' is not a target"));
  CHECK(contains(error_of("pipeline:\n  migrate: [\"0:2>sim:0\"]\n"),
                 "pipeline.migrate at runs/x.yaml:2: entry 0 (0:2>sim:0) is at position 0"));
  CHECK(contains(error_of("pipeline:\n  migrate: [\"64:2>sim:0\", \"32:3>sim:0\"]\n"),
                 "entry 1 (32:3>sim:0) comes before the previous one"));
  CHECK(contains(error_of("pipeline:\n  migrate: [\"32:2>cpu@nowhere\"]\n"),
                 "entry 0 (32:2>cpu@nowhere) names node 'nowhere'"));
  CHECK(contains(error_of("pipeline:\n  migrate: 32\n"), "pipeline.migrate at runs/x.yaml:2"));
}

TEST_CASE("pipeline.migrate: to_yaml writes it so that it reads back exactly") {
  run_config c;
  c.pipeline.migrate = {parse_stage_migration("10:1>sim:1"), parse_stage_migration("20:2>cpu/3@127.0.0.1:9")};
  const run_config again = parse_config(to_yaml(c), "to_yaml");
  CHECK(again.pipeline.migrate == c.pipeline.migrate);
  CHECK(to_yaml(again) == to_yaml(c));
}

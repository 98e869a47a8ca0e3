// pipeline.rebalance, rebalance_margin and testing.rebalance_moves: off by default, moves parsed once into
// typed values, bad values named with their key, line and fix, and written back by to_yaml exactly.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using namespace petra::config::testing;

TEST_CASE("pipeline.rebalance: off by default, forced moves parse into (position, from, to)") {
  CHECK_FALSE(run_config{}.pipeline.rebalance);
  CHECK(run_config{}.pipeline.rebalance_margin == 0.05);
  CHECK(load_config("default").testing.rebalance_moves.empty());
  const run_config c = parse_config(
      "pipeline:\n  rebalance: true\ntesting:\n  rebalance_moves: [\"32:2>3\", \"64:3>2\"]\n", "x");
  REQUIRE(c.testing.rebalance_moves.size() == 2);
  CHECK(c.testing.rebalance_moves[0] == block_move{32, 2, 3});
  CHECK(c.testing.rebalance_moves[1] == block_move{64, 3, 2});
  CHECK(parse_block_move("128:5>4").str() == "128:5>4");
}

TEST_CASE("pipeline.rebalance_* and testing.rebalance_moves: bad values name the key, the line and the fix") {
  CHECK(contains(error_of("pipeline:\n  rebalance: true\ntesting:\n  rebalance_moves: [\"32:2-3\"]\n"),
                 "testing.rebalance_moves at runs/x.yaml:4: entry 0 '32:2-3' is not a move: write "
                 "position:from>to"));
  CHECK(contains(error_of("pipeline:\n  rebalance: true\ntesting:\n  rebalance_moves: [\"x:2>3\"]\n"),
                 "is not a move"));
  CHECK(contains(error_of("pipeline:\n  rebalance: true\ntesting:\n  rebalance_moves: [\"32:0>1\"]\n"),
                 "is not a move"));
  CHECK(contains(error_of("testing:\n  rebalance_moves: [\"32:2>3\"]\n"),
                 "testing.rebalance_moves at runs/x.yaml:2: lists moves but pipeline.rebalance (default) "
                 "is false"));
  CHECK(contains(error_of("pipeline:\n  rebalance: true\ntesting:\n  rebalance_moves: [\"32:1>3\"]\n"),
                 "entry 0 (32:1>3) moves a block between stages that are not neighbours"));
  CHECK(contains(
      error_of("pipeline:\n  rebalance: true\ntesting:\n  rebalance_moves: [\"32:1>2\", \"32:2>3\"]\n"),
      "entry 1 (32:2>3) does not follow the previous one: at most one move per point"));
  CHECK(contains(error_of("pipeline:\n  rebalance: true\ntesting:\n  rebalance_moves: [\"0:1>2\"]\n"),
                 "is at position 0"));
  CHECK(contains(error_of("pipeline:\n  rebalance: true\n", {"pipeline.rebalance_margin=1.5"}),
                 "pipeline.rebalance_margin in --set pipeline.rebalance_margin=1.5: got 1.5"));
  CHECK(contains(error_of("pipeline:\n  rebalance: maybe\n"), "pipeline.rebalance at runs/x.yaml:2"));
}

TEST_CASE(
    "pipeline.rebalance_* and testing.rebalance_moves: to_yaml writes them so that they read back exactly") {
  run_config c;
  c.pipeline.rebalance = true;
  c.pipeline.rebalance_margin = 0.1 + 0.2;
  c.testing.rebalance_moves = {block_move{10, 1, 2}, block_move{20, 2, 1}};
  const run_config again = parse_config(to_yaml(c), "to_yaml");
  CHECK(again.pipeline.rebalance);
  CHECK(again.pipeline.rebalance_margin == c.pipeline.rebalance_margin);
  CHECK(again.testing.rebalance_moves == c.testing.rebalance_moves);
  CHECK(to_yaml(again) == to_yaml(c));
}

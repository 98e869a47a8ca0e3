// The `nodes:` map: named `petra node`s that pipeline.nodes and spare_nodes refer to; every bad entry is an
// error naming its YAML path and line, to_yaml round-trips it, and --set edits it.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "config/decimal.hpp"
#include "tests/config/config_errors.hpp"

using namespace petra::config;
using namespace petra::config::testing;

namespace {

const std::string two_nodes =
    "nodes:\n"
    "  gpu1: {address: \"10.0.0.2:7001\", cert: /etc/petra/gpu1.pem, key: /etc/petra/gpu1.key, ca: "
    "/etc/petra/ca.pem}\n"
    "  cpu2: {address: \"127.0.0.1:7002\"}\n";

void check_same_nodes(const run_config& a, const run_config& b) {
  REQUIRE(a.nodes.size() == b.nodes.size());
  for (auto i = a.nodes.begin(), j = b.nodes.begin(); i != a.nodes.end(); ++i, ++j) {
    CHECK(i->first == j->first);
    CHECK(i->second.address == j->second.address);
    CHECK(i->second.cert == j->second.cert);
    CHECK(i->second.key == j->second.key);
    CHECK(i->second.ca == j->second.ca);
  }
  CHECK(a.pipeline.nodes == b.pipeline.nodes);
  CHECK(a.pipeline.spare_nodes == b.pipeline.spare_nodes);
}

}  // namespace

TEST_CASE("named nodes load, pipeline entries may name them, and resolve to their addresses") {
  const run_config c =
      parse_config(two_nodes +
                       "pipeline:\n  stage_blocks: [1, 1, 1]\n"
                       "  nodes: [local, gpu1, cpu2]\n  spare_nodes: [cpu2, \"10.0.0.9:7009\"]\n",
                   "x");
  REQUIRE(c.nodes.size() == 2);
  CHECK(c.nodes.at("gpu1").address == "10.0.0.2:7001");
  CHECK(c.nodes.at("gpu1").cert == "/etc/petra/gpu1.pem");
  CHECK(c.nodes.at("gpu1").key == "/etc/petra/gpu1.key");
  CHECK(c.nodes.at("gpu1").ca == "/etc/petra/ca.pem");
  CHECK(c.nodes.at("cpu2").address == "127.0.0.1:7002");
  CHECK(c.nodes.at("cpu2").cert.empty());

  CHECK(resolve_node_address(c, "local") == "local");
  CHECK(resolve_node_address(c, "gpu1") == "10.0.0.2:7001");
  CHECK(resolve_node_address(c, "cpu2") == "127.0.0.1:7002");
  CHECK(resolve_node_address(c, "10.0.0.9:7009") == "10.0.0.9:7009");
  for (const std::string& entry : c.pipeline.nodes) CHECK_NOTHROW(resolve_node_address(c, entry));
  for (const std::string& entry : c.pipeline.spare_nodes) CHECK(resolve_node_address(c, entry) != "local");

  try {
    resolve_node_address(c, "gpu3");
    FAIL("an unknown name resolved");
  } catch (const config_error& e) {
    CHECK(contains(e.what(), "'gpu3'"));
    CHECK(contains(e.what(), "known names: cpu2, gpu1"));
  }

  // without a nodes: section everything keeps its old meaning
  CHECK(parse_config("training: {epochs: 1}\n", "x").nodes.empty());
  CHECK(parse_config("nodes:\n", "x").nodes.empty());
  CHECK(parse_config("nodes: {}\n", "x").nodes.empty());
}

TEST_CASE("bad node entries name the YAML path and the line") {
  const std::string typo =
      error_of("training: {epochs: 1}\nnodes:\n  gpu1:\n    adress: \"10.0.0.2:7001\"\n");
  CHECK(contains(typo, "unknown key 'nodes.gpu1.adress' at runs/x.yaml:4"));
  CHECK(contains(typo, "did you mean 'address'?"));
  CHECK(contains(typo, "known keys in nodes.gpu1: address, cert, key, ca"));

  CHECK(contains(error_of("nodes:\n  gpu1: {address: [a, b]}\n"),
                 "nodes.gpu1.address at runs/x.yaml:2: expected a string, got a list"));
  CHECK(contains(error_of("nodes:\n  gpu1: \"10.0.0.2:7001\"\n"),
                 "nodes.gpu1 at runs/x.yaml:2: expected a mapping with keys address, cert, key, ca"));
  CHECK(contains(error_of("nodes: [gpu1]\n"), "nodes at runs/x.yaml:1: expected a mapping from node names"));

  const std::string bad_address = error_of("nodes:\n  cpu2:\n    address: 127.0.0.1\n");
  CHECK(contains(bad_address, "nodes.cpu2.address at runs/x.yaml:3: '127.0.0.1' is not host:port"));
  CHECK(
      contains(error_of("nodes:\n  cpu2: {address: \"h:70000\"}\n"), "nodes.cpu2.address at runs/x.yaml:2"));
  CHECK(contains(error_of("nodes:\n  cpu2: {address: local}\n"), "nodes.cpu2.address at runs/x.yaml:2"));
  CHECK(contains(error_of("nodes:\n  cpu2: {cert: a, key: b, ca: c}\n"),
                 "nodes.cpu2 at runs/x.yaml:2: has no address"));
  CHECK(contains(error_of("nodes:\n  cpu2:\n"), "nodes.cpu2 at runs/x.yaml:2: has no address"));

  const std::string partial_tls = error_of(
      "nodes:\n  cpu2: {address: \"127.0.0.1:7002\"}\n  gpu1:\n    address: \"10.0.0.2:7001\"\n"
      "    cert: /etc/petra/gpu1.pem\n");
  CHECK(contains(partial_tls,
                 "nodes.gpu1 at runs/x.yaml:3: sets some TLS files but not nodes.gpu1.key, nodes.gpu1.ca"));
  CHECK(contains(partial_tls, "all three"));

  CHECK(contains(error_of("nodes:\n  local: {address: \"127.0.0.1:7002\"}\n"),
                 "nodes.local at runs/x.yaml:2: 'local' is reserved"));
  CHECK(contains(error_of("nodes:\n  \"10.0.0.2:7001\": {address: \"10.0.0.2:7001\"}\n"),
                 "looks like host:port"));
  CHECK(contains(error_of("nodes:\n  gpu 1: {address: \"10.0.0.2:7001\"}\n"),
                 "nodes.gpu 1 at runs/x.yaml:2: 'gpu 1' is not a node name"));
  CHECK(contains(
      error_of("nodes:\n  gpu1: {address: \"10.0.0.2:7001\"}\n  gpu1: {address: \"10.0.0.2:7002\"}\n"),
      "nodes.gpu1 at runs/x.yaml:3: duplicate"));
}

TEST_CASE("a pipeline entry that names no defined node is an error naming the entry and the known names") {
  const std::string undefined =
      error_of(two_nodes + "pipeline:\n  stage_blocks: [1, 1]\n  nodes: [gpu1, gpu3]\n");
  CHECK(contains(undefined, "pipeline.nodes at runs/x.yaml:6: entry 1 is 'gpu3'"));
  CHECK(contains(undefined, "known names: cpu2, gpu1"));

  const std::string no_nodes = error_of("pipeline:\n  nodes: [gpu1]\n");
  CHECK(contains(no_nodes, "pipeline.nodes at runs/x.yaml:2: entry 0 is 'gpu1'"));
  CHECK(contains(no_nodes, "no names are defined"));

  const std::string spare = error_of(two_nodes + "pipeline:\n  spare_nodes: [gpu4]\n");
  CHECK(contains(spare, "pipeline.spare_nodes at runs/x.yaml:5: entry 0 is 'gpu4'"));
  CHECK(contains(spare, "known names: cpu2, gpu1"));
  CHECK(contains(error_of(two_nodes + "pipeline:\n  spare_nodes: [local]\n"),
                 "pipeline.spare_nodes at runs/x.yaml:5"));
}

TEST_CASE("round trip: nodes are written sorted by name and read back exactly") {
  run_config c =
      parse_config(two_nodes + "pipeline:\n  nodes: [gpu1, local, cpu2]\n  spare_nodes: [cpu2]\n", "x");
  c.nodes["true"] = {"[::1]:7003", "", "", ""};  // a name YAML would read as a bool unquoted
  c.nodes["0-node_"] = {"h:1", "/a b/c.pem", "k #1", "\"ca\""};
  const std::string yaml = to_yaml(c);
  CAPTURE(yaml);
  CHECK(yaml.find("\nnodes:\n  \"0-node_\":\n") != std::string::npos);
  CHECK(yaml.find("  cpu2:\n") < yaml.find("  gpu1:\n"));
  const run_config again = parse_config(yaml, "to_yaml");
  check_same_nodes(c, again);
  CHECK(to_yaml(again) == yaml);

  const std::string empty = to_yaml(run_config{});
  CHECK(empty.find("\nnodes: {}\n") != std::string::npos);
  CHECK(parse_config(empty, "to_yaml").nodes.empty());
}

TEST_CASE("--set edits one node's key, creates an entry, or replaces the whole map") {
  const run_config moved = parse_config(two_nodes, "x", {"nodes.gpu1.address=10.0.0.5:7005"});
  CHECK(moved.nodes.at("gpu1").address == "10.0.0.5:7005");
  CHECK(moved.nodes.at("gpu1").cert == "/etc/petra/gpu1.pem");  // the rest of the entry is kept
  CHECK(moved.nodes.at("cpu2").address == "127.0.0.1:7002");

  const run_config added =
      parse_config(two_nodes, "x", {"nodes.gpu3.address=10.0.0.3:7003", "pipeline.nodes=[gpu3, gpu1]"});
  CHECK(added.nodes.size() == 3);
  CHECK(resolve_node_address(added, "gpu3") == "10.0.0.3:7003");
  CHECK(parse_config(two_nodes, "x", {"nodes.gpu4={address: \"h:4\"}"}).nodes.at("gpu4").address == "h:4");

  const run_config replaced = parse_config(two_nodes, "x", {"nodes={gpu9: {address: \"10.0.0.9:7009\"}}"});
  REQUIRE(replaced.nodes.size() == 1);
  CHECK(replaced.nodes.at("gpu9").address == "10.0.0.9:7009");
  CHECK(parse_config(two_nodes, "x", {"nodes={}"}).nodes.empty());

  CHECK(contains(error_of(two_nodes, {"nodes.gpu1.adress=h:1"}),
                 "unknown key 'nodes.gpu1.adress' in --set nodes.gpu1.adress=h:1 (did you mean 'address'?)"));
  CHECK(contains(error_of(two_nodes, {"nodes.gpu1.address=nowhere"}),
                 "nodes.gpu1.address in --set nodes.gpu1.address=nowhere: 'nowhere' is not host:port"));
  CHECK(contains(error_of(two_nodes, {"nodes.gpu5.cert=/x.pem"}),
                 "nodes.gpu5 in --set nodes.gpu5.cert=/x.pem: has no address"));
  CHECK(contains(error_of(two_nodes, {"nodes.local.address=h:1"}),
                 "nodes.local in --set nodes.local.address=h:1: 'local' is reserved"));
  // replacing the map drops the names pipeline.nodes used
  CHECK(contains(error_of(two_nodes + "pipeline:\n  nodes: [gpu1]\n", {"nodes={}"}), "entry 0 is 'gpu1'"));
}

TEST_CASE("faults.kill_node: the seconds after '@' are one whole number, else the config is refused") {
  // Before: any mix of digits and dots passed, and "." or "1.2.3" threw in the pipeline's std::stod
  // after the run directory was made.
  for (const std::string bad : {".", "1.2.3", "..5", "", "2s", "-1"}) {
    CAPTURE(bad);
    CHECK(contains(error_of("faults:\n  kill_node: [\"127.0.0.1:7001@" + bad + "\"]\n"),
                   "faults.kill_node at runs/x.yaml:2: entry 0 is '127.0.0.1:7001@" + bad + "'"));
  }
  for (const std::string good : {"2", "2.5", ".5", "0", "10."}) {
    CAPTURE(good);
    CHECK(error_of("faults:\n  kill_node: [\"127.0.0.1:7001@" + good + "\"]\n") == "(no error)");
  }
  // The seconds the pipeline sends the node: the one reader, decimal_seconds.
  CHECK(decimal_seconds("2") == 2.0);
  CHECK(decimal_seconds("2.5") == 2.5);
  CHECK(decimal_seconds(".5") == 0.5);
  CHECK(decimal_seconds("10.") == 10.0);
  CHECK(decimal_seconds("0.125") == 0.125);
  for (const std::string bad : {".", "1.2.3", "", "2s", "-1", "1e3"}) CHECK(decimal_seconds(bad) == -1);
}

// Stages on separate hosts: a coordinator and two `petra node`s, each in its own network namespace
// with its own address, over TLS with mutual authentication. Lockstep ends bit-identical to one
// process; a node whose certificate another CA signed is refused and the run says so.
#include <cstring>
#include <memory>

#include "compute/serialize/safetensors.hpp"
#include "tests/actors/metrics_lines.hpp"
#include "tests/remote/child_process.hpp"
#include "tests/remote/net_hosts.hpp"
#include "tests/skip.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

// Each host has ports of its own: copies of this test running at once never meet.
constexpr const char* node_port = "7001";

/// Host 0 runs the coordinator, hosts 1 and 2 a node each. `ca/` certifies every host's address;
/// `other/` is a second CA with a certificate for host 2's address.
struct separate_hosts {
  net_hosts hosts{"hosts", 3};
  temp_dir dir{"hosts"};

  void make_certificates() {
    for (const auto& args :
         {std::vector<std::string>{dir / "ca", hosts.address(0), hosts.address(1), hosts.address(2)},
          std::vector<std::string>{dir / "other", hosts.address(2)}}) {
      std::vector<std::string> argv{"/bin/bash", PETRA_SOURCE_DIR "/deploy/make-test-ca.sh"};
      argv.insert(argv.end(), args.begin(), args.end());
      const auto r = run_command(argv, 120000ms);
      REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    }
  }
  std::string node_address(int i) const { return hosts.address(i) + ":" + node_port; }
  /// ci_smoke's 5 stages: 2 on host 1's node, 3 on host 2's, the rest with the coordinator.
  std::string placement() const {
    return "[local," + node_address(1) + "," + node_address(2) + ",local,local]";
  }

  /// `petra node` on host i with the certificate `ca` signed for its address, trusting the run's CA.
  std::unique_ptr<child_process> start_node(int i, const std::string& ca) {
    const std::string own = dir / (ca + "/" + hosts.address(i));
    auto node = std::make_unique<child_process>(
        hosts.on(i, {PETRA_BINARY, "node", "--threads", "2", "--listen", node_address(i), "--tls-cert",
                     own + ".pem", "--tls-key", own + ".key", "--tls-ca", dir / "ca/ca.pem"}));
    const auto line = node->read_line(60000ms);
    REQUIRE_MESSAGE(line.has_value(), "petra node on host " << i << " printed nothing within 60 s");
    REQUIRE_MESSAGE(line->find("listening on " + node_address(i) + " (TLS)") != std::string::npos,
                    "petra node on host " << i << " said: " << *line);
    return node;
  }

  /// `petra train ci_smoke` in lockstep into dir/runs/<name>: in one process when `nodes` is
  /// empty, else on host 0 with it as pipeline.nodes and host 0's certificate.
  child_result train(const std::string& name, const std::string& nodes) const {
    std::vector<std::string> sets{"runtime.mode=lockstep", "output.dir=" + dir / "runs",
                                  "output.name=" + name};
    if (!nodes.empty()) {
      const std::string own = dir / ("ca/" + hosts.address(0));
      sets.insert(sets.end(), {"pipeline.nodes=" + nodes, "tls.cert=" + own + ".pem",
                               "tls.key=" + own + ".key", "tls.ca=" + dir / "ca/ca.pem"});
    }
    std::vector<std::string> argv{PETRA_BINARY, "train", "ci_smoke"};
    for (const std::string& set : sets) argv.insert(argv.end(), {"--set", set});
    // 240 s each: the two runs of a test case fit ctest's 600 s even on a loaded machine.
    return run_command(nodes.empty() ? argv : hosts.on(0, argv), 240000ms);
  }
};

#define PETRA_SEPARATE_HOSTS_OR_SKIP(h)                                                                 \
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))         \
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)"); \
  if (!(h).hosts.unavailable().empty()) PETRA_SKIP((h).hosts.unavailable());                            \
  REQUIRE_MESSAGE(have_program("openssl"), "openssl is missing (deploy/install-deps.sh installs it)")

/// Tensors of two checkpoints that differ in name, shape or any byte.
int differing_tensors(const std::string& a_path, const std::string& b_path) {
  const auto a = load_safetensors(a_path).tensors, b = load_safetensors(b_path).tensors;
  REQUIRE(a.size() == b.size());
  REQUIRE(!a.empty());
  int differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const tensor &x = a[i].second, &y = b[i].second;
    if (a[i].first != b[i].first || x.shape() != y.shape() || std::memcmp(x.data(), y.data(), x.bytes()) != 0)
      ++differing;
  }
  return differing;
}

}  // namespace

TEST_CASE("lockstep on three hosts over TLS (coordinator and two nodes): bit-identical to one process") {
  separate_hosts h;
  PETRA_SEPARATE_HOSTS_OR_SKIP(h);
  h.make_certificates();
  auto first = h.start_node(1, "ca");
  auto second = h.start_node(2, "ca");

  const auto one = h.train("one", "");
  REQUIRE_MESSAGE(one.exit_code == 0, one.output);
  const auto spread = h.train("spread", h.placement());
  REQUIRE_MESSAGE(spread.exit_code == 0, spread.output);
  CHECK(first->alive());
  CHECK(second->alive());

  const auto runs = h.dir.path() / "runs";
  CHECK(differing_tensors(runs / "one/checkpoint.safetensors", runs / "spread/checkpoint.safetensors") == 0);
  const auto a = event_lines(runs / "one", "epoch"), b = event_lines(runs / "spread", "epoch");
  REQUIRE(a.size() == b.size());
  REQUIRE(!a.empty());
  for (std::size_t e = 0; e < a.size(); ++e)
    for (const char* key : {"train_loss", "train_accuracy", "test_loss", "test_accuracy"}) {
      CAPTURE(e);
      CAPTURE(key);
      CHECK(a[e][key] == b[e][key]);
    }
  const auto done = spread.output.rfind("done: ");
  MESSAGE("three hosts: " << (done == std::string::npos ? spread.output : spread.output.substr(done)));
}

TEST_CASE("a node whose certificate another CA signed is refused across hosts, and the run says so") {
  separate_hosts h;
  PETRA_SEPARATE_HOSTS_OR_SKIP(h);
  h.make_certificates();
  auto good = h.start_node(1, "ca");
  auto intruder = h.start_node(2, "other");
  const auto r = h.train("refused", h.placement());
  // Nodes are connected while the run is prepared: an unreachable one is bad input (exit code 2),
  // reported before anything is written.
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK_MESSAGE(r.output.find("stage 3: cannot reach the node at " + h.node_address(2)) != std::string::npos,
                r.output);
  CHECK_MESSAGE(r.output.find("handshake") != std::string::npos, r.output);  // refused by TLS, not by TCP
  // ... and it says so, rather than asking whether the node runs.
  CHECK_MESSAGE(r.output.find("the TLS handshake failed: is the node's certificate signed by the run's CA") !=
                    std::string::npos,
                r.output);
  CHECK(!std::filesystem::exists(h.dir.path() / "runs/refused"));
  CHECK(good->alive());
  CHECK(intruder->alive());
  MESSAGE("the run said: " << r.output);
}

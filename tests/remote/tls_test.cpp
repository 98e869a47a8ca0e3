// `petra node` over TLS: a peer with a certificate of the configured CA connects and gets a stage
// built; a peer without a certificate, or with one of another CA, or speaking plain BASP, is
// refused with an error (never a hang); the node keeps serving. Also the cost of TLS on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <cstring>

#include "actors/caf_config.hpp"
#include "actors/node_connection.hpp"
#include "config/config.hpp"
#include "tests/actors/runtime_fixture.hpp"
#include "tests/files.hpp"
#include "tests/remote/child_process.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

#define PETRA_REQUIRE_OPENSSL_CLI()        \
  REQUIRE_MESSAGE(have_program("openssl"), \
                  "the openssl command is missing (deploy/install-deps.sh installs openssl)")

/// A CA with certificates for "coordinator" and "node", and a second CA with "intruder".
struct test_pki {
  temp_dir dir{"tls"};
  test_pki() {
    for (const auto& args : {std::vector<std::string>{dir / "ca", "coordinator", "node"},
                             std::vector<std::string>{dir / "other", "intruder"}}) {
      std::vector<std::string> argv{"/bin/bash", PETRA_SOURCE_DIR "/deploy/make-test-ca.sh"};
      argv.insert(argv.end(), args.begin(), args.end());
      const auto r = run_command(argv, 60000ms);
      REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    }
  }
  config::tls_config tls(const std::string& ca_dir, const std::string& name,
                         const std::string& trust_dir) const {
    return {dir / (ca_dir + "/" + name + ".pem"), dir / (ca_dir + "/" + name + ".key"),
            dir / (trust_dir + "/ca.pem")};
  }
  std::vector<std::string> node_flags() const {
    const auto t = tls("ca", "node", "ca");
    return {"--listen", "127.0.0.1:0", "--tls-cert", t.cert, "--tls-key", t.key, "--tls-ca", t.ca};
  }
};

/// Asks the node to build stage 1 of the tiny model; the stage's (empty) report proves that
/// messages cross the connection both ways.
void spawn_stage_through(caf::actor_system& sys, const messages::node_actor& node) {
  config::run_config c = config::load_config("tiny");
  c.runtime.mode = config::runtime_mode::lockstep;
  c.pipeline.stage_blocks = {1, 2, 1, 1};
  caf::scoped_actor self{sys};
  messages::stage_actor stage;
  self->request(node, std::chrono::seconds(30), messages::spawn_stage{config::to_yaml(c), 1, 10})
      .receive([&](messages::stage_actor& s) { stage = s; },
               [&](caf::error& e) { FAIL("spawn failed: " << sys.render(e)); });
  REQUIRE(stage);
  self->request(stage, std::chrono::seconds(30), atoms::report_atom_v)
      .receive([&](stage_report& r) { CHECK(r.stage == 1); },
               [&](caf::error& e) { FAIL("report failed: " << sys.render(e)); });
}

/// Connects with `tls` and expects an error within `bound`.
void expect_refused(const config::tls_config& tls, const std::string& address, const std::string& what,
                    std::chrono::milliseconds timeout = 5000ms) {
  caf_config cfg(2, tls);
  caf::actor_system sys(cfg);
  const auto t0 = std::chrono::steady_clock::now();
  auto node = connect_node(sys, address, tls, timeout);
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_MESSAGE(!node, what << ": connected although it should be refused");
  if (!node) MESSAGE(what << ": refused after " << seconds << " s: " << sys.render(node.error()));
}

/// A raw TLS client (no BASP): true when the node sends application data (its BASP handshake)
/// within 5 s, i.e. the TLS handshake was accepted.
bool node_talks_tls_to(int port, const std::string& ca, const std::string& cert, const std::string& key) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  REQUIRE(ctx);
  REQUIRE(SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr) == 1);
  if (!cert.empty()) {
    REQUIRE(SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM) == 1);
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  timeval five{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &five, sizeof five);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  SSL* ssl = SSL_new(ctx.get());
  SSL_set_fd(ssl, fd);
  bool talked = false;
  if (SSL_connect(ssl) == 1) {
    char buf[64];
    talked = SSL_read(ssl, buf, sizeof buf) > 0;
  }
  SSL_free(ssl);
  close(fd);
  return talked;
}

}  // namespace

TEST_CASE("a TLS node serves a peer of its CA and refuses every other peer") {
  PETRA_REQUIRE_OPENSSL_CLI();
  test_pki pki;
  node_child node(pki.node_flags(), pki.dir / "node.stderr");

  SUBCASE("a coordinator with a certificate of the CA connects and gets a stage built") {
    const auto tls = pki.tls("ca", "coordinator", "ca");
    caf_config cfg(2, tls);
    caf::actor_system sys(cfg);
    auto handle = connect_node(sys, node.address(), tls, 10000ms);
    REQUIRE_MESSAGE(handle, error_text(sys, handle));
    spawn_stage_through(sys, *handle);
  }
  SUBCASE("a raw TLS client: the node talks only to one with a certificate of its CA") {
    const auto good = pki.tls("ca", "coordinator", "ca");
    const auto bad = pki.tls("other", "intruder", "ca");
    CHECK(node_talks_tls_to(node.port(), good.ca, good.cert, good.key));      // the control
    CHECK_FALSE(node_talks_tls_to(node.port(), good.ca, "", ""));             // no certificate
    CHECK_FALSE(node_talks_tls_to(node.port(), good.ca, bad.cert, bad.key));  // another CA's
  }
  SUBCASE("a certificate of another CA is refused, whichever CA the client trusts") {
    expect_refused(pki.tls("other", "intruder", "other"), node.address(), "another CA, trusting it");
    expect_refused(pki.tls("other", "intruder", "ca"), node.address(), "another CA's certificate");
  }
  SUBCASE("a plaintext connection to a TLS node fails cleanly") {
    expect_refused(config::tls_config{}, node.address(), "plain BASP");
  }
  SUBCASE("a TLS connection to a plain node fails cleanly") {
    node_child plain({"--listen", "127.0.0.1:0"});
    expect_refused(pki.tls("ca", "coordinator", "ca"), plain.address(), "TLS to a plain node");
    CHECK(plain.process().alive());
  }
  // After every kind of refusal the node still serves a proper peer.
  {
    CHECK(node.process().alive());
    const auto tls = pki.tls("ca", "coordinator", "ca");
    caf_config cfg(2, tls);
    caf::actor_system sys(cfg);
    auto handle = connect_node(sys, node.address(), tls, 10000ms);
    REQUIRE_MESSAGE(handle, error_text(sys, handle));
    spawn_stage_through(sys, *handle);
  }
  node.process().stop();
  MESSAGE("node stderr:\n" << file_text(pki.dir / "node.stderr"));
}

TEST_CASE("a 50 MB tensor crosses a TLS connection intact (and what TLS costs on loopback)") {
  PETRA_REQUIRE_OPENSSL_CLI();
  test_pki pki;
  for (const bool use_tls : {false, true}) {
    const auto server_tls = use_tls ? pki.tls("ca", "node", "ca") : config::tls_config{};
    const auto client_tls = use_tls ? pki.tls("ca", "coordinator", "ca") : config::tls_config{};
    caf_config server_cfg(2, server_tls);
    caf::actor_system server(server_cfg);
    auto echo = server.spawn([]() -> caf::behavior { return {[](tensor& t) { return std::move(t); }}; });
    auto port = use_tls ? caf::openssl::publish(echo, 0, "127.0.0.1", true)
                        : server.middleman().publish(echo, 0, "127.0.0.1", true);
    REQUIRE(port);
    caf_config client_cfg(2, client_tls);
    caf::actor_system client(client_cfg);
    auto remote = use_tls ? caf::openssl::remote_actor(client, "127.0.0.1", *port)
                          : client.middleman().remote_actor("127.0.0.1", *port);
    REQUIRE(remote);
    const int64_t floats = 50'000'000 / 4;
    tensor sent = tensor::empty({floats});
    for (int64_t i = 0; i < floats; ++i) sent.data()[i] = static_cast<float>(i % 1000003);
    caf::scoped_actor self{client};
    const int rounds = 4;  // the first one warms up (buffers, pages) and is not timed
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < rounds; ++i) {
      if (i == 1) t0 = std::chrono::steady_clock::now();
      tensor copy = sent.clone();
      self->request(*remote, std::chrono::seconds(60), std::move(copy))
          .receive(
              [&](tensor& back) {
                REQUIRE(back.numel() == floats);
                CHECK(std::memcmp(back.data(), sent.data(), sent.bytes()) == 0);
              },
              [&](caf::error& e) { FAIL(client.render(e)); });
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE((use_tls ? "TLS  " : "plain") << ": 50 MB echo " << seconds / (rounds - 1) * 1000
                                          << " ms per round trip, " << 2 * 50.0 * (rounds - 1) / seconds
                                          << " MB/s (both directions, client and server on one 2-core box)");
    caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE("lockstep through a TLS node is bit-identical to one process") {
  PETRA_REQUIRE_FASHION_MNIST();
  PETRA_REQUIRE_OPENSSL_CLI();
  test_pki pki;
  node_child node(pki.node_flags());
  const trained one = train_once(tiny_config("lockstep", "petra"));
  auto split = tiny_config("lockstep", "petra");
  split.pipeline.nodes = {"local", node.address(), node.address(), "local"};
  split.tls = pki.tls("ca", "coordinator", "ca");
  CHECK(differing(one, train_once(split)) == 0);
}

// `petra node` refuses to start unsafely or half-configured: exit code 2 and a message that says
// what is wrong (and names the file when one is missing).
#include "tests/remote/child_process.hpp"

using namespace petra::testing;

namespace {

child_result petra_node(const std::vector<std::string>& flags) {
  std::vector<std::string> argv{PETRA_BINARY, "node"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return run_command(argv, 30000ms);
}

}  // namespace

TEST_CASE("petra node refuses a non-loopback address without TLS") {
  for (const char* listen : {"0.0.0.0:0", "192.0.2.1:7001"}) {
    CAPTURE(listen);
    const auto r = petra_node({"--listen", listen});
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("without TLS") != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find("--tls-cert") != std::string::npos, r.output);
  }
}

TEST_CASE("petra node wants all three TLS files, each readable") {
  temp_dir dir("node-cli");
  const std::string missing = dir / "no-such-cert.pem";
  SUBCASE("a missing certificate file is named") {
    const auto r = petra_node({"--listen", "0.0.0.0:0", "--tls-cert", missing, "--tls-key", dir / "k.pem",
                               "--tls-ca", dir / "ca.pem"});
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find(missing) != std::string::npos, r.output);
    CHECK(r.output.find("--tls-cert") != std::string::npos);
  }
  SUBCASE("one flag of three is an error naming the missing ones") {
    const auto r = petra_node({"--listen", "127.0.0.1:0", "--tls-cert", missing});
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("--tls-key is missing") != std::string::npos, r.output);
  }
  SUBCASE("a file that is not a certificate is named") {
    const std::string junk = dir / "junk.pem";
    std::ofstream(junk) << "not a certificate\n";
    const auto r =
        petra_node({"--listen", "127.0.0.1:0", "--tls-cert", junk, "--tls-key", junk, "--tls-ca", junk});
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find(junk + " is not a PEM certificate") != std::string::npos, r.output);
  }
  SUBCASE("a key of another certificate is named") {
    REQUIRE_MESSAGE(have_program("openssl"),
                    "the openssl command is missing (deploy/install-deps.sh installs openssl)");
    const auto made = run_command(
        {"/bin/bash", PETRA_SOURCE_DIR "/deploy/make-test-ca.sh", dir / "pki", "a", "b"}, 60000ms);
    REQUIRE_MESSAGE(made.exit_code == 0, made.output);
    const auto r = petra_node({"--listen", "127.0.0.1:0", "--tls-cert", dir / "pki/a.pem", "--tls-key",
                               dir / "pki/b.key", "--tls-ca", dir / "pki/ca.pem"});
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("does not match the certificate") != std::string::npos, r.output);
  }
}

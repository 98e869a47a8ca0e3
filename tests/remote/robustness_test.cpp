// A plain `petra node` against bytes that are not BASP: garbage, a header announcing a huge
// payload, a malformed handshake, a truncated message. The node drops that connection and keeps
// serving: a proper peer still gets a stage built afterwards, and the process is still alive.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <caf/all.hpp>
#include <cstring>
#include <random>

#include "actors/caf_config.hpp"
#include "actors/node_connection.hpp"
#include "config/config.hpp"
#include "tests/files.hpp"
#include "tests/remote/child_process.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// A raw TCP connection to 127.0.0.1:port; every read waits at most `timeout`.
class raw_connection {
 public:
  raw_connection(int port, std::chrono::seconds timeout) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    timeval t{static_cast<time_t>(timeout.count()), 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~raw_connection() { close(fd_); }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  void send_bytes(const std::vector<uint8_t>& bytes) {
    // The node may drop us before all is written: a failed send is an answer too.
    ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  void finish_writing() { shutdown(fd_, SHUT_WR); }

  /// Reads (and ignores: the node's own handshake) until the node closes the connection; false
  /// when it is still open after the timeout.
  bool closed_by_peer() {
    char buf[4096];
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET || errno == EPIPE;
    }
  }

 private:
  int fd_ = -1;
};

/// A BASP header (32 bytes, network order): operation, 2 padding bytes, flags, payload length,
/// operation data, source and destination actor.
std::vector<uint8_t> basp_header(uint8_t operation, uint32_t payload_len, uint64_t operation_data) {
  std::vector<uint8_t> h(32, 0);
  h[0] = operation;
  for (int i = 0; i < 4; ++i) h[4 + i] = static_cast<uint8_t>(payload_len >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) h[8 + i] = static_cast<uint8_t>(operation_data >> (56 - 8 * i));
  return h;
}

std::vector<uint8_t> random_bytes(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

constexpr uint8_t client_handshake = 0x01;
constexpr uint8_t direct_message = 0x02;
constexpr uint64_t basp_version = 3;  // CAF 0.17's (a server handshake carries it)

/// The node still builds a stage for a proper peer.
void node_still_serves(node_child& node) {
  const auto exited = node.process().wait_exit(0ms);
  REQUIRE_MESSAGE(!exited, "the node exited with code " << exited.value_or(-1));
  caf_config cfg(2);
  caf::actor_system sys(cfg);
  auto handle = connect_node(sys, node.address(), config::tls_config{}, 10000ms);
  REQUIRE_MESSAGE(handle, error_text(sys, handle));
  config::run_config c = config::load_config("tiny");
  c.runtime.mode = config::runtime_mode::lockstep;
  caf::scoped_actor self{sys};
  bool built = false;
  self->request(*handle, std::chrono::seconds(30), messages::spawn_stage{config::to_yaml(c), 0, 10})
      .receive([&](messages::stage_actor& s) { built = static_cast<bool>(s); },
               [&](caf::error& e) { FAIL("spawn failed: " << sys.render(e)); });
  CHECK(built);
}

}  // namespace

TEST_CASE("a node drops connections that do not speak BASP and keeps serving") {
  temp_dir dir("robust");
  node_child node({"--listen", "127.0.0.1:0"}, dir / "node.stderr");
  struct attack {
    const char* name;
    std::vector<uint8_t> bytes;
    bool half_close;  // we end the stream ourselves (truncation): only survival is checked
  };
  std::vector<attack> attacks;
  attacks.push_back({"64 KiB of random bytes", random_bytes(65536, 1), false});
  attacks.push_back({"an unknown operation", basp_header(0x7f, 0, 0), false});
  attacks.push_back(
      {"a handshake announcing a 4 GiB payload", basp_header(client_handshake, 0xfffffff0u, 0), false});
  attacks.push_back({"a handshake without payload", basp_header(client_handshake, 0, 0), false});
  attacks.push_back({"a server handshake sent to the server", basp_header(0x00, 0, basp_version), false});
  {
    auto malformed = basp_header(client_handshake, 64, 0);
    const auto junk = random_bytes(64, 2);
    malformed.insert(malformed.end(), junk.begin(), junk.end());
    attacks.push_back({"a handshake with a malformed payload", malformed, false});
  }
  attacks.push_back({"a message before any handshake", basp_header(direct_message, 0, 0), false});
  {
    auto truncated = basp_header(client_handshake, 4096, 0);
    const auto part = random_bytes(100, 3);
    truncated.insert(truncated.end(), part.begin(), part.end());
    attacks.push_back({"a handshake cut short", truncated, true});
  }
  {
    auto half = basp_header(client_handshake, 100, 0);
    half.resize(16);
    attacks.push_back({"half a header", half, true});
  }
  for (const auto& a : attacks) {
    const std::string name = a.name;
    CAPTURE(name);
    const auto t0 = std::chrono::steady_clock::now();
    {
      raw_connection conn(node.port(), std::chrono::seconds(15));
      conn.send_bytes(a.bytes);
      if (a.half_close) conn.finish_writing();
      const bool dropped = conn.closed_by_peer();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      CHECK_MESSAGE(dropped, name << ": the node kept the connection open for " << seconds << " s");
      MESSAGE(name << ": connection closed by the node after " << seconds << " s");
    }
    node_still_serves(node);
  }
  node.process().stop();
  MESSAGE("node stderr:\n" << file_text(dir / "node.stderr"));
}

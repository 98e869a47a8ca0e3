// bench_runtime part (c): loopback throughput between two processes over CAF's middleman with a
// request/ack window, and the serialized size of a tensor.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "actors/caf_config.hpp"
#include "actors/coordinator.hpp"
#include "bench/runtime/common.hpp"
#include "messages/type_ids.hpp"

namespace petra::bench {
namespace {

using namespace petra;

}  // namespace

// ---- (c) two processes over loopback -----------------------------------------------------------

// The second process: a sink that acknowledges each tensor with its byte count. It exits on
// close_atom, when its parent goes (PDEATHSIG, or a changed ppid), or after 120 s at the latest.
int serve(int port_fd) {
  alarm(120);
  const pid_t parent = getppid();
  caf_config cfg(cores);
  caf::actor_system sys{cfg};
  auto closed = std::make_shared<std::atomic<bool>>(false);
  auto sink = sys.spawn([closed](caf::event_based_actor* self) -> caf::behavior {
    return {[](const tensor& t) { return static_cast<uint64_t>(t.bytes()); },
            [](caf::ping_atom) { return caf::pong_atom_v; },
            [=](caf::close_atom) {
              closed->store(true);
              self->quit();
            }};
  });
  auto port = sys.middleman().publish(sink, 0, "127.0.0.1", true);
  const std::string line = std::to_string(port ? *port : 0) + "\n";
  if (write(port_fd, line.data(), line.size()) < 0) closed->store(true);
  close(port_fd);
  while (port && !closed->load() && getppid() == parent)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  return 0;
}

// The child process and its port; the destructor makes sure it is gone.
class server_process {
 public:
  server_process() {
    int fds[2];
    if (pipe(fds) != 0) return;
    const std::string fd_text = std::to_string(fds[1]);
    std::error_code ignored;
    std::string self_path = std::filesystem::read_symlink("/proc/self/exe", ignored).string();
    if (self_path.empty()) self_path = "/proc/self/exe";
    const char* argv[] = {self_path.c_str(), "--serve", fd_text.c_str(), nullptr};
    const pid_t me = getpid();
    pid_ = fork();
    if (pid_ == 0) {  // only async-signal-safe calls until exec
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != me) _exit(1);
      close(fds[0]);
      execv(argv[0], const_cast<char* const*>(argv));
      _exit(127);
    }
    close(fds[1]);
    pollfd p{fds[0], POLLIN, 0};
    char text[16] = {};
    if (pid_ > 0 && poll(&p, 1, 10000) == 1 && read(fds[0], text, sizeof text - 1) > 0)
      port_ = std::atoi(text);
    close(fds[0]);
  }
  ~server_process() {
    if (pid_ <= 0) return;
    for (int i = 0; i < 250; ++i) {  // 5 s to leave on its own
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  uint16_t port() const { return static_cast<uint16_t>(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

struct window_state {
  caf::actor peer;
  tensor payload;
  int64_t total = 0, sent = 0, acked = 0;
  clock_type::time_point t0;
  bool done = false;
  std::shared_ptr<std::promise<std::string>> out;  // "" = fine, else the error
};
using window_sender = caf::stateful_actor<window_state>*;

void send_one(window_sender self) {
  auto& st = self->state;
  ++st.sent;
  self->request(st.peer, request_timeout, st.payload)  // st.payload: a handle, the buffer is shared
      .then(
          [=](uint64_t) {
            auto& s = self->state;
            if (++s.acked == s.total && !s.done) {
              s.done = true;
              s.out->set_value("");
              self->quit();
            } else if (s.sent < s.total) {
              send_one(self);
            }
          },
          [=](caf::error& e) {
            auto& s = self->state;
            if (!s.done) s.done = true, s.out->set_value(self->system().render(e));
            self->quit();
          });
}

/// Seconds to send `messages` tensors of `floats` with at most `window` unacknowledged; < 0 on error.
double timed_window(caf::actor_system& sys, const caf::actor& peer, const tensor& payload, int64_t messages,
                    int window, std::string& why) {
  auto out = std::make_shared<std::promise<std::string>>();
  auto result = out->get_future();
  const auto t0 = clock_type::now();
  auto sender = sys.spawn([=](window_sender self) -> caf::behavior {
    auto& st = self->state;
    st.peer = peer, st.payload = payload, st.total = messages, st.out = out;
    for (int i = 0; i < window && st.sent < st.total; ++i) send_one(self);
    return {[](caf::ok_atom) {}};
  });
  if (result.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    caf::anon_send_exit(sender, caf::exit_reason::user_shutdown);
    why = "no answer in 60 s";
    return -1;
  }
  why = result.get();
  return why.empty() ? seconds_since(t0) : -1;
}

void part_remote(int repeats) {
  heading("(c)   two processes on 127.0.0.1 (fork + exec, CAF middleman publish/remote_actor, caf_config)");
  server_process server;
  if (server.port() == 0) return note("failed: the server process did not publish a port");
  caf_config cfg(cores);
  caf::actor_system sys{cfg};
  auto peer = sys.middleman().remote_actor("127.0.0.1", server.port());
  if (!peer) return note("failed: remote_actor: " + sys.render(peer.error()));
  const probe_result pings = run_probe(sys, *peer, 1000, 0);
  if (!pings.error.empty()) return note("failed: " + pings.error);
  row("small message round trip (request ping -> pong, event-based)", summarize(pings.small_us), "us");
  struct size_case {
    const char* label;
    int64_t floats, messages;
  };
  for (const size_case c : {size_case{"4 MB", int64_t{1} << 20, 25}, size_case{"50 MB", 12500000, 4}}) {
    const tensor payload = tensor::zeros({c.floats});
    for (int window : {1, 2}) {
      std::vector<double> mb_per_s;
      std::string why;
      for (int r = 0; r <= repeats && why.empty(); ++r) {  // r = 0 warms the connection up
        const double s = timed_window(sys, *peer, payload, c.messages, window, why);
        if (s > 0 && r > 0) mb_per_s.push_back(static_cast<double>(payload.bytes() * c.messages) / s / 1e6);
      }
      const std::string what = std::string(c.label) + " tensors, request/ack window " +
                               std::to_string(window) + " (" + std::to_string(c.messages) + " per run)";
      if (!why.empty())
        note(what + ": failed: " + why);
      else
        row(what.c_str(), summarize(mb_per_s, true), "MB/s");
    }
  }
  note("MB = 10^6 bytes; one direction: time from the first send to the last ack");
  caf::anon_send(*peer, caf::close_atom_v);
}

// ---- serialized size -----------------------------------------------------------------------------

void part_serialized_size() {
  caf_config cfg(cores);
  caf::actor_system sys{cfg};
  tensor t = tensor::zeros({1 << 20});
  std::vector<char> alone, as_message;
  caf::binary_serializer f{sys, alone};
  auto err = f(t);
  caf::message m = caf::make_message(t);
  caf::binary_serializer g{sys, as_message};
  if (!err) err = g(m);
  heading("      serialized 4 MB tensor (1M floats = 4194304 payload bytes), caf::binary_serializer");
  if (err) return note("failed: " + sys.render(err));
  std::printf("      %-58s %12zu %12lld  bytes (overhead)\n", "the tensor alone", alone.size(),
              static_cast<long long>(alone.size()) - (1 << 22));
  std::printf("      %-58s %12zu %12lld  bytes (overhead)\n", "as a caf::message (what BASP carries)",
              as_message.size(), static_cast<long long>(as_message.size()) - (1 << 22));
}

}  // namespace petra::bench

// What the actor runtime costs on top of the compute: (a) async/lockstep PETRA on the default
// preset against the sum of its stages' compute, (b) an in-process tensor hand-off (bytes
// copied, small-message round trip) and (c) loopback throughput between two processes over
// CAF's middleman with a request/ack window. Prints one table: medians of repeats, the best beside.
// (d) what recording the timeline (output.trace) costs.
//   bench_runtime [--phases R] [--micro-batches N] [--only a|b|c|d]
//   (--serve FD is the hidden mode of the second process in part (c))
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
#include "training/setup.hpp"
#include "training/simulate_runtime.hpp"

namespace {

using namespace petra;
using namespace petra::bench;

// ---- (a) the pipeline against its stages' compute --------------------------------------------

// Per micro-batch, over one phase. ideal = max(Σ compute / cores, busiest compute), where a stage's
// compute is what it takes in the simulator (training/simulator: the same stages, threads and
// device, run one at a time, so no stage waits for a core there): the wall time if the cores were
// never idle and the busiest stage never waited. The actor runtimes' own busy time is no reference:
// with every stage on a thread of its own and more stages than cores, it counts the time a stage
// waited for a core.
struct phase_sample {
  double wall, sum_busy, max_busy, ideal, overhead;
};

config::run_config pipeline_config(const std::string& mode, const std::string& pacing, int64_t count) {
  return config::load_config(
      "default",
      {"runtime.mode=" + mode, "runtime.pacing=" + pacing, "runtime.threads=" + std::to_string(cores),
       "data.train_limit=" + std::to_string(64 * count), "training.epochs=1000"});
}

/// Runs `phases` phases of `count` micro-batches of `mode` after a warm-up; per phase, the wall
/// time and the stages' busy seconds (phase_busy_seconds: the simulator's are its compute alone).
bool run_phases(const std::string& mode, const std::string& pacing, int phases, int64_t count,
                std::vector<double>& walls, std::vector<std::vector<double>>& busy, std::string& why) {
  const config::run_config cfg = pipeline_config(mode, pacing, count);
  training_data data = load_training_data(cfg);
  const int64_t per_epoch = data.train_feed->micro_batches_per_epoch();
  if (per_epoch < count) {
    why = "only " + std::to_string(per_epoch) + " micro-batches per epoch";
    return false;
  }
  const optimizer_settings opt = optimizer_for(cfg.training, per_epoch / cfg.training.accumulation);
  auto runner =
      mode == "simulate" ? make_simulate_runtime(cfg, data, opt) : make_actor_runtime(cfg, data, opt);
  // Warm-up (oneDNN primitives, buffer pools): the last micro-batches of epoch 1.
  const int64_t warm = std::min<int64_t>(count, 24);
  runner->train(phase_request::of(1, per_epoch - warm, warm), {});
  for (int p = 0; p < phases; ++p) {
    const auto t0 = clock_type::now();
    const phase_result totals = runner->train(phase_request::of(p + 2, 0, count), {});
    walls.push_back(seconds_since(t0));
    std::vector<double> b;
    for (const stage_report& s : totals.stages) b.push_back(s.phase_busy_seconds);
    busy.push_back(std::move(b));
  }
  return true;
}

/// Each stage's compute per micro-batch, alone: the median over the simulator's phases.
bool stage_compute(int phases, int64_t count, std::vector<double>& per_stage, std::string& why) {
  std::vector<double> walls;
  std::vector<std::vector<double>> busy;
  if (!run_phases("simulate", "stages", phases, count, walls, busy, why)) return false;
  for (std::size_t j = 0; j < busy.front().size(); ++j) {
    std::vector<double> v;
    for (const auto& phase : busy) v.push_back(phase[j] / static_cast<double>(count));
    std::sort(v.begin(), v.end());
    per_stage.push_back(v[v.size() / 2]);
  }
  return true;
}

bool run_pipeline(const std::string& mode, const std::string& pacing, int phases, int64_t count, double ideal,
                  std::vector<phase_sample>& out, std::string& why) {
  std::vector<double> walls;
  std::vector<std::vector<double>> busy;
  if (!run_phases(mode, pacing, phases, count, walls, busy, why)) return false;
  for (std::size_t p = 0; p < walls.size(); ++p) {
    const double n = static_cast<double>(count);
    double sum_busy = 0, max_busy = 0;
    for (double b : busy[p]) sum_busy += b, max_busy = std::max(max_busy, b);
    out.push_back({walls[p] / n, sum_busy / n, max_busy / n, ideal, walls[p] / n / ideal - 1});
  }
  return true;
}

void part_pipeline(int phases, int64_t count) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    heading("(a)   skipped: Fashion-MNIST is missing (/usr/share/datasets/fashion-mnist)");
    return;
  }
  std::vector<double> compute;
  std::string why;
  if (!stage_compute(phases, count, compute, why)) {
    heading("(a)   skipped: " + why);
    return;
  }
  double sum = 0, most = 0;
  for (double c : compute) sum += c, most = std::max(most, c);
  heading("(a)   each stage's compute alone (simulate: the same stages, one at a time), per micro-batch");
  row("sum over the stages", summarize({sum}), "ms", 1e3);
  row("busiest stage", summarize({most}), "ms", 1e3);
  const double ideal = std::max(sum / cores, most);
  // async with each pacing (runtime.pacing: stages, the default, and loader), then lockstep.
  const std::pair<std::string, std::string> runs[] = {
      {"async", "stages"}, {"async", "loader"}, {"lockstep", "stages"}};
  for (const auto& [mode, pacing] : runs) {
    std::vector<phase_sample> s;
    const std::string name = mode == "async" ? mode + " (pacing: " + pacing + ")" : mode;
    if (!run_pipeline(mode, pacing, phases, count, ideal, s, why)) {
      heading("(a)   " + name + ": skipped: " + why);
      continue;
    }
    auto pick = [&](double phase_sample::*field) {
      std::vector<double> v;
      for (const auto& x : s) v.push_back(x.*field);
      return summarize(v);
    };
    heading("(a)   " + name +
            " PETRA, default preset (fashion_small, J = 8, one block per stage), micro-batch 64,");
    note(std::to_string(cores) + " CAF threads, " + std::to_string(phases) + " phases x " +
         std::to_string(count) + " micro-batches, each phase starting empty and ending drained");
    row("wall per micro-batch (train() call / micro-batches)", pick(&phase_sample::wall), "ms", 1e3);
    row("sum of stage busy per micro-batch (waits for a core included)", pick(&phase_sample::sum_busy), "ms",
        1e3);
    row("busiest stage's busy per micro-batch (likewise)", pick(&phase_sample::max_busy), "ms", 1e3);
    row("ideal wall per micro-batch = max(sum compute / cores, busiest compute)", pick(&phase_sample::ideal),
        "ms", 1e3);
    row("overhead = wall / ideal - 1   (target <= 2 %)", pick(&phase_sample::overhead), "%", 1e2);
  }
  note("compute = the simulator's phase_busy_seconds (wall clock inside a stage's forward/backward with");
  note("no other stage running); the loss and loader actors, message passing, pipeline fill/drain,");
  note("stages waiting for a core and other processes on this machine count as overhead");
}

// ---- (b) in-process hand-off -------------------------------------------------------------------

struct probe_state {
  caf::actor echo;
  tensor payload;
  int64_t warmup = 0, small_left = 0, tensor_left = 0, index = 0;
  clock_type::time_point t0;
  probe_result result;
  std::shared_ptr<std::promise<probe_result>> out;
};
using probe_actor = caf::stateful_actor<probe_state>*;

void finish(probe_actor self, std::string error = {}) {
  self->state.result.error = std::move(error);
  self->state.out->set_value(std::move(self->state.result));
  self->quit();
}

void next_tensor(probe_actor self) {
  auto& st = self->state;
  if (st.tensor_left == 0) return finish(self);
  st.t0 = clock_type::now();
  tensor handle = st.payload;  // a second handle on the same buffer: the message owns no copy
  self->request(st.echo, request_timeout, std::move(handle))
      .then(
          [=](tensor& back, uint64_t seen_by_echo) {
            auto& s = self->state;
            const double us = seconds_since(s.t0) * 1e6;
            if (s.index++ >= s.warmup) {
              s.result.tensor_us.push_back(us), ++s.result.tensor_trips, --s.tensor_left;
              const auto sent = reinterpret_cast<uint64_t>(s.payload.data());
              if (seen_by_echo != sent) s.result.copied_there += static_cast<int64_t>(s.payload.bytes());
              if (reinterpret_cast<uint64_t>(back.data()) != sent)
                s.result.copied_back += static_cast<int64_t>(back.bytes());
            }
            next_tensor(self);
          },
          [=](caf::error& e) { finish(self, self->system().render(e)); });
}

void next_ping(probe_actor self) {
  auto& st = self->state;
  if (st.small_left == 0) {
    st.index = 0;
    return next_tensor(self);
  }
  st.t0 = clock_type::now();
  self->request(st.echo, request_timeout, caf::ping_atom_v)
      .then(
          [=](caf::pong_atom) {
            auto& s = self->state;
            const double us = seconds_since(s.t0) * 1e6;
            if (s.index++ >= s.warmup) s.result.small_us.push_back(us), --s.small_left;
            next_ping(self);
          },
          [=](caf::error& e) { finish(self, self->system().render(e)); });
}

caf::behavior echo_behavior(caf::event_based_actor*) {
  return {[](caf::ping_atom) { return caf::pong_atom_v; },
          [](tensor& t) -> caf::result<tensor, uint64_t> {
            const auto seen = reinterpret_cast<uint64_t>(t.data());
            return {std::move(t), seen};
          }};
}

/// Round trips from an event-based probe to `target` (which answers ping with pong and echoes a
/// tensor with the address it saw): `pings` small ones, then `tensors` with a 4 MB tensor.
}  // namespace

namespace petra::bench {

probe_result run_probe(caf::actor_system& sys, const caf::actor& target, int64_t pings, int64_t tensors) {
  auto out = std::make_shared<std::promise<probe_result>>();
  auto result = out->get_future();
  auto probe = sys.spawn([=](probe_actor self) -> caf::behavior {
    auto& st = self->state;
    st.echo = target, st.out = out, st.payload = tensor::zeros({1 << 20});
    st.warmup = std::min<int64_t>(500, pings / 10), st.small_left = pings, st.tensor_left = tensors;
    next_ping(self);
    return {[](caf::ok_atom) {}};  // never sent: the replies drive it
  });
  probe_result r;
  if (result.wait_for(std::chrono::seconds(60)) == std::future_status::ready)
    r = result.get();
  else
    r.error = "no answer in 60 s";
  caf::anon_send_exit(probe, caf::exit_reason::user_shutdown);
  return r;
}

}  // namespace petra::bench

namespace {

using namespace petra;
using namespace petra::bench;

void part_local() {
  caf_config cfg(cores);
  caf::actor_system sys{cfg};
  auto echo = sys.spawn(echo_behavior);
  const probe_result r = run_probe(sys, echo, 20000, 2000);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  heading("(b)   in-process hand-off (one actor_system, caf_config, two event-based actors)");
  if (!r.error.empty()) return note("failed: " + r.error);
  row("small message round trip (request ping -> pong)", summarize(r.small_us), "us");
  row("4 MB tensor round trip (request tensor -> same tensor back)", summarize(r.tensor_us), "us");
  std::printf("      %-58s %12lld %12lld  bytes (over %lld round trips)\n", "bytes copied: there / back",
              static_cast<long long>(r.copied_there), static_cast<long long>(r.copied_back),
              static_cast<long long>(r.tensor_trips));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--serve") == 0) return serve(std::atoi(argv[2]));
  int phases = 5;
  int64_t count = 64;
  std::string only;
  const char* usage = "usage: bench_runtime [--phases R] [--micro-batches N] [--only a|b|c|d]\n";
  if ((argc - 1) % 2 != 0) return std::fprintf(stderr, "%s", usage), 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--phases")
      phases = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--micro-batches")
      count = std::max(8, std::atoi(argv[i + 1]));
    else if (flag == "--only")
      only = argv[i + 1];
    else
      return std::fprintf(stderr, "%s", usage), 2;
  }
  alarm(600);  // a last resort: the benchmark never hangs
  std::printf(
      "petra runtime benchmark: %u hardware threads, CAF 0.17.6; median and best of repeated "
      "measurements\n\n",
      std::thread::hardware_concurrency());
  std::printf("part  %-58s %12s %12s  unit\n", "measurement", "median", "best");
  try {
    if (only.empty() || only == "a") part_pipeline(phases, count);
    if (only.empty() || only == "b") part_local();
    if (only.empty() || only == "c") {
      part_remote(phases);
      part_serialized_size();
    }
    if (only.empty() || only == "d") part_trace(phases, count);
    std::printf("\nbest = the best repeat: the least time or overhead, the most MB/s\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_runtime: %s\n", e.what());
    return 1;
  }
  return 0;
}

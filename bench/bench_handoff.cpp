// The hand-over's cost per message at the compute level (docs/design.md §5): export_for on the
// producer's backend and import on the consumer's, for an activation of the default preset's size
// (64×32×28×28 floats) and a small tensor (64×10 logits). Two medians per path: the caller's time
// in the two calls (what a stage actor's thread spends), and the time until the consumer's stream
// has the tensor (its synchronize() returned). The CPU→CPU handle is the baseline; the cuda:0
// paths are measured where a GPU is usable.
//   bench_handoff [--repeats N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/backend_factory.hpp"
#include "compute/sim/sim_devices.hpp"

namespace {

using namespace petra;
using clock_type = std::chrono::steady_clock;

double micros(clock_type::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct sample {
  double calls_us;   // export_for + import on the caller's thread
  double usable_us;  // ... + the consumer's synchronize()
};

/// One message: a fresh tensor made by `producer` (complete before the clock starts), handed over.
sample hand_over(backend& producer, backend& consumer, const shape_t& shape) {
  const tensor t = producer.zeros(shape);
  producer.synchronize();
  const auto t0 = clock_type::now();
  const tensor received = consumer.import(producer.export_for(t, consumer.where()));
  const auto t1 = clock_type::now();
  consumer.synchronize();
  const auto t2 = clock_type::now();
  if (received.shape() != shape) std::abort();
  return {micros(t1 - t0), micros(t2 - t0)};
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_handoff [--repeats N]\n");
      return 2;
    }
  }
  if (repeats < 1) {
    std::fprintf(stderr, "bench_handoff: --repeats must be at least 1\n");
    return 2;
  }

  backend_options options;
  options.sim = std::make_shared<sim_devices>();
  auto sim0_a = make_backend(device::parse("sim:0"), options);
  auto sim0_b = make_backend(device::parse("sim:0"), options);
  auto sim1 = make_backend(device::parse("sim:1"), options);
  auto cpu_a = make_backend(device{}, options), cpu_b = make_backend(device{}, options);

  struct path {
    const char* name;
    backend* producer;
    backend* consumer;
  };
  std::vector<path> paths = {{"cpu → cpu (a handle)", cpu_a.get(), cpu_b.get()},
                             {"sim:0 → sim:0, other stream", sim0_a.get(), sim0_b.get()},
                             {"sim:0 → sim:1 (copy)", sim0_a.get(), sim1.get()},
                             {"sim:0 → cpu (to the host)", sim0_a.get(), cpu_a.get()},
                             {"cpu → sim:0 (from the host)", cpu_a.get(), sim0_a.get()}};
  // The same paths on a GPU where one is usable: two stage backends on cuda:0 (each its own
  // stream), and cuda:1 when there is a second GPU.
  std::string why;
  std::unique_ptr<backend> cuda0_a, cuda0_b, cuda1;
  if (cuda_usable(&why)) {
    cuda0_a = make_backend(device::parse("cuda:0"), options);
    cuda0_b = make_backend(device::parse("cuda:0"), options);
    paths.push_back({"cuda:0 → cuda:0, other stream", cuda0_a.get(), cuda0_b.get()});
    paths.push_back({"cuda:0 → cpu (pinned staging)", cuda0_a.get(), cpu_a.get()});
    paths.push_back({"cpu → cuda:0 (pinned staging)", cpu_a.get(), cuda0_a.get()});
    try {
      cuda1 = make_backend(device::parse("cuda:1"), options);
      paths.push_back({"cuda:0 → cuda:1 (peer or host copy)", cuda0_a.get(), cuda1.get()});
    } catch (const std::exception& e) {
      std::printf("cuda:1 skipped: %s\n", e.what());
    }
  } else {
    std::printf("cuda paths skipped: %s\n", why.c_str());
  }
  const std::vector<std::pair<const char*, shape_t>> sizes = {{"64×32×28×28 (6.4 MB)", {64, 32, 28, 28}},
                                                              {"64×10 (2.5 KB)", {64, 10}}};

  std::printf(
      "hand-over per message, median of %d (µs): calls = export_for + import on the caller's thread; "
      "usable = until the consumer's stream has it\n\n",
      repeats);
  std::printf("| path | tensor | calls µs | usable µs |\n|---|---|---:|---:|\n");
  for (const auto& [size_name, shape] : sizes) {
    for (const path& p : paths) {
      for (int i = 0; i < 3; ++i) hand_over(*p.producer, *p.consumer, shape);  // warm the pools
      std::vector<double> calls, usable;
      for (int i = 0; i < repeats; ++i) {
        const sample s = hand_over(*p.producer, *p.consumer, shape);
        calls.push_back(s.calls_us);
        usable.push_back(s.usable_us);
      }
      std::printf("| %s | %s | %.2f | %.2f |\n", p.name, size_name, median(calls), median(usable));
    }
  }
  return 0;
}

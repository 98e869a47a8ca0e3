// The trace recorder's cost: ns per recorded span (one thread; as many threads as cores, each on
// its own track) and per call that records nothing (a disabled recorder; a tick outside the
// window). A recorded event's cost includes the first touch of its memory (about 100 bytes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "training/trace_recorder.hpp"

using petra::training::trace_clock;
using petra::training::trace_recorder;

namespace {

/// Median over `repeats` of the ns per call of `calls` calls made by `threads` threads at once.
template <class Body>
double ns_per_call(int threads, int64_t calls, int repeats, Body body) {
  std::vector<double> results;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w) workers.emplace_back([&, w] { body(r, w, calls); });
    for (auto& t : workers) t.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    results.push_back(1e9 * seconds / static_cast<double>(calls));  // per call of one thread
  }
  std::sort(results.begin(), results.end());
  return results[results.size() / 2];
}

}  // namespace

int main() {
  constexpr int64_t calls = 1'000'000;
  constexpr int repeats = 5;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("trace recorder, %lld calls per thread, median of %d (%u hardware threads)\n",
              static_cast<long long>(calls), repeats, cores);
  std::printf("%-52s %10s\n", "call", "ns/call");

  auto span_bench = [&](int threads) {
    std::vector<std::unique_ptr<trace_recorder>> recorders;
    for (int r = 0; r < repeats; ++r)
      recorders.push_back(std::make_unique<trace_recorder>(0, calls, 64'000'000));
    return ns_per_call(threads, calls, repeats, [&](int r, int w, int64_t n) {
      auto track = recorders[r]->track("coordinator", "stage " + std::to_string(w + 1));
      const auto now = trace_clock::now();
      for (int64_t i = 0; i < n; ++i) recorders[r]->span(track, "forward", now, now, i, {{"micro_batch", i}});
    });
  };
  std::printf("%-52s %10.1f\n", "span, recorded (1 thread)", span_bench(1));
  for (int threads = 2; threads <= static_cast<int>(cores) && threads <= 8; threads *= 2)
    std::printf("%-52s %10.1f\n",
                ("span, recorded (" + std::to_string(threads) + " threads, own tracks)").c_str(),
                span_bench(threads));
  {
    trace_recorder recorder(0, calls, 64'000'000);
    auto track = recorder.track("coordinator", "stage 1");
    const double ns = ns_per_call(1, calls, 1, [&](int, int, int64_t n) {
      const auto now = trace_clock::now();
      for (int64_t i = 0; i < n; ++i) recorder.counter(track, "mailbox", now, i, static_cast<double>(i));
    });
    std::printf("%-52s %10.1f\n", "counter, recorded (1 thread)", ns);
  }
  {
    trace_recorder disabled;
    auto track = disabled.track("coordinator", "stage 1");
    const double ns = ns_per_call(1, 100 * calls, repeats, [&](int, int, int64_t n) {
      const auto now = trace_clock::now();
      for (int64_t i = 0; i < n; ++i) disabled.span(track, "forward", now, now, i, {{"micro_batch", i}});
    });
    std::printf("%-52s %10.2f\n", "span, recorder disabled", ns);
  }
  {
    trace_recorder outside(0, 10);
    auto track = outside.track("coordinator", "stage 1");
    const double ns = ns_per_call(1, 100 * calls, repeats, [&](int, int, int64_t n) {
      const auto now = trace_clock::now();
      for (int64_t i = 0; i < n; ++i)
        outside.span(track, "forward", now, now, 1000 + i, {{"micro_batch", i}});
    });
    std::printf("%-52s %10.2f\n", "span, tick outside the window", ns);
  }
  {
    const double ns = ns_per_call(1, calls, repeats, [&](int, int, int64_t n) {
      volatile int64_t sink = 0;
      for (int64_t i = 0; i < n; ++i) sink = sink + trace_clock::now().time_since_epoch().count();
    });
    std::printf("%-52s %10.1f\n", "for scale: one trace_clock::now()", ns);
  }
  {
    trace_recorder recorder(0, 500);
    std::vector<petra::training::trace_track> tracks;
    for (int s = 0; s < 10; ++s)
      tracks.push_back(recorder.track("coordinator", "stage " + std::to_string(s + 1)));
    const auto now = trace_clock::now();
    for (int64_t tick = 0; tick < 500; ++tick)
      for (int s = 0; s < 10; ++s) {
        const auto t = now + std::chrono::microseconds(1000 * tick);
        recorder.span(tracks[s], "forward", t, t + std::chrono::microseconds(300), tick,
                      {{"micro_batch", tick}});
        recorder.span(tracks[s], "backward", t + std::chrono::microseconds(400),
                      t + std::chrono::microseconds(900), tick, {{"micro_batch", tick - 2 * s}});
        const auto id = petra::training::trace_flow_id(petra::training::flow_kind::forward, s, tick, tick);
        recorder.flow_out(tracks[s], id, t + std::chrono::microseconds(290), tick);
        if (s + 1 < 10) recorder.flow_in(tracks[s + 1], id, t + std::chrono::microseconds(300), tick);
        recorder.counter(tracks[s], "mailbox", t, tick, 1);
      }
    const auto t0 = std::chrono::steady_clock::now();
    const std::string json = recorder.export_json();
    const double ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("export of 500 ticks × 10 tracks (%zu events): %.1f MB JSON in %.1f ms\n", recorder.size(),
                static_cast<double>(json.size()) / 1e6, ms);
  }
  return 0;
}

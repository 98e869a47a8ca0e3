// Shared by the parts of bench_runtime: clocks, medians and the table's rows.
#pragma once

#include <algorithm>
#include <caf/fwd.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace petra::bench {

using clock_type = std::chrono::steady_clock;
constexpr int cores = 2;  // the scheduler threads every actor system here gets (runtime.threads)
constexpr auto request_timeout = std::chrono::seconds(30);

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// The median and the best repeat (the least time or overhead; the most MB/s).
struct summary {
  double median = 0, best = 0;
};
inline summary summarize(std::vector<double> v, bool higher_is_better = false) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], higher_is_better ? v.back() : v.front()};
}

inline void heading(const std::string& text) { std::printf("%s\n", text.c_str()); }
inline void row(const char* what, summary s, const char* unit, double scale = 1) {
  std::printf("      %-58s %12.2f %12.2f  %s\n", what, s.median * scale, s.best * scale, unit);
}
inline void note(const std::string& text) { std::printf("      %s\n", text.c_str()); }

/// Part (b)'s probe: round trips of small messages and of 4 MB tensors to `target`, timed by
/// an event-based actor, with the bytes copied on the way there and back.
struct probe_result {
  std::vector<double> small_us, tensor_us;
  int64_t tensor_trips = 0, copied_there = 0, copied_back = 0;  // bytes
  std::string error;
};
probe_result run_probe(caf::actor_system& sys, const caf::actor& target, int64_t pings, int64_t tensors);

/// Part (c): two processes over loopback; `serve` is the second process's mode.
int serve(int port_fd);
void part_remote(int repeats);
void part_serialized_size();

/// Part (d): the timeline's cost, trace on against off, phases in turn.
void part_trace(int phases, int64_t count);

}  // namespace petra::bench

// The recorder's event and track storage, shared by recording (trace_recorder.cpp) and the JSON
// writer and merger (trace_export.cpp); not part of the recorder's interface.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "training/trace_recorder.hpp"

namespace petra::training {
namespace detail {

/// At most this many integer args per span.
constexpr int max_trace_args = 3;

/// One recorded event (spans, flows, counters share the layout; unused fields stay zero).
struct trace_event {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;  // spans
  int64_t tick = 0;
  uint64_t flow_id = 0;  // flows
  double value = 0;      // counters
  const char* name = nullptr;
  char phase = 0;          // 'X' span, 's' flow out, 'f' flow in, 'C' counter
  bool full_name = false;  // a counter name that already names its track (merged events)
  uint8_t arg_count = 0;
  trace_arg args[max_trace_args] = {};
};

/// One track: its names, its ids in the written trace, its events behind its own lock. Events
/// live in fixed-size chunks, so that recording never moves what is already there.
struct trace_track_buffer {
  static constexpr std::size_t chunk_size = 4096;
  /// Events taken from the recorder's cap at a time (one atomic operation per this many events).
  static constexpr std::size_t quota_block = 256;

  std::string process, name;
  int process_id = 0;
  int track_id = 0;
  bool merged = false;
  mutable std::mutex lock;  // guards the fields below
  std::vector<std::unique_ptr<trace_event[]>> chunks;
  std::size_t count = 0;  // events in the chunks
  std::size_t quota = 0;  // events admitted by the cap, not recorded yet

  /// Appends `event` (the caller holds `lock`).
  void append(const trace_event& event) {
    if (count == chunks.size() * chunk_size) chunks.push_back(std::make_unique<trace_event[]>(chunk_size));
    chunks[count / chunk_size][count % chunk_size] = event;
    ++count;
  }
  /// A copy of every event (the caller holds `lock`).
  std::vector<trace_event> copy() const {
    std::vector<trace_event> out;
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i) out.push_back(chunks[i / chunk_size][i % chunk_size]);
    return out;
  }
};

}  // namespace detail
}  // namespace petra::training

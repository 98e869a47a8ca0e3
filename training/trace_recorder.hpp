// A timeline of the pipeline in the Chrome trace event format (ui.perfetto.dev, chrome://tracing):
// spans, message flows and counters on one track per actor, kept for a window of ticks only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace petra::training {

/// The clock of every trace timestamp (and of the pings that align two processes' clocks).
using trace_clock = std::chrono::steady_clock;

/// `time` in microseconds since the steady clock's epoch.
double trace_time_us(trace_clock::time_point time);

/// An integer shown with a span in the viewer ("micro_batch": 17). `key` must be a string literal.
struct trace_arg {
  const char* key;
  int64_t value;
};

/// What a message flow carries; part of its id and its name in the viewer.
enum class flow_kind : uint8_t { forward, backward, label, credit };

/// A flow id from what identifies one message: kind, sending stage (0-based, < 512), tick and
/// micro-batch id. Ids differ for any two messages whose ticks and micro-batch ids each lie within
/// 2^21 of each other (any trace window); ids stay below 2^53, exact in a JSON viewer.
uint64_t trace_flow_id(flow_kind kind, int stage, int64_t tick, int64_t micro_batch_id);

namespace detail {
struct trace_event;
struct trace_track_buffer;
}  // namespace detail

/// A handle to one track of a recorder: cheap to copy; empty (every call a no-op) when the
/// recorder is disabled. Valid as long as its recorder lives.
class trace_track {
 public:
  bool valid() const { return buffer_ != nullptr; }

 private:
  friend class trace_recorder;
  detail::trace_track_buffer* buffer_ = nullptr;
};

/// Records spans, flows and counters of the events whose tick lies in [from_tick, to_tick], at
/// most `max_events` of them (the rest are counted as dropped; a track takes its share of the cap
/// in blocks of 256, so with T tracks up to 256·T of it may go unused). Any thread may record; each
/// track has its own lock, so actors on their own tracks do not contend. Outside the window, or
/// when disabled, a call only compares the tick and returns.
class trace_recorder {
 public:
  /// A disabled recorder: records nothing, writes an empty trace.
  trace_recorder();
  trace_recorder(int64_t from_tick, int64_t to_tick, std::size_t max_events = 1'000'000);
  ~trace_recorder();
  trace_recorder(const trace_recorder&) = delete;
  trace_recorder& operator=(const trace_recorder&) = delete;

  bool enabled() const { return enabled_; }
  /// Whether an event at `tick` would be kept (enabled, tick in the window).
  bool records(int64_t tick) const { return enabled_ && tick >= from_tick_ && tick <= to_tick_; }

  /// The track `name` ("stage 3", "loader") of process `process` ("coordinator",
  /// "node 127.0.0.1:7001"); the same pair gives the same track. Empty when disabled.
  trace_track track(const std::string& process, const std::string& name);

  /// A slice [begin, end] named `name` (a string literal: "forward", "backward", "optimizer step",
  /// "wait for input", "hand-over", "serialize"), with the tick and `args` as its details.
  void span(trace_track track, const char* name, trace_clock::time_point begin, trace_clock::time_point end,
            int64_t tick, std::initializer_list<trace_arg> args = {});
  /// The sending end of message flow `flow_id`, at `time` inside a span of `track`. Pass the
  /// message's tick at both ends, so that a flow is kept whole or not at all.
  void flow_out(trace_track track, uint64_t flow_id, trace_clock::time_point time, int64_t tick);
  /// The receiving end of flow `flow_id`, at `time` inside the span that handles the message.
  void flow_in(trace_track track, uint64_t flow_id, trace_clock::time_point time, int64_t tick);
  /// A sample of counter `name` (a string literal: "mailbox", "fifo", "credits") of `track`.
  void counter(trace_track track, const char* name, trace_clock::time_point time, int64_t tick, double value);

  /// Events kept so far (merged ones included), and events refused by the cap.
  std::size_t size() const;
  std::size_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  /// Every event, as trace JSON text (what a node sends to the coordinator for `merge`).
  std::string export_json() const;
  /// Adds the events of another recorder's `export_json`, each timestamp plus `clock_offset_us`
  /// (see estimate_clock_offset); its processes stay processes of their own. Its events were
  /// windowed and capped by their own recorder: all are kept. Throws
  /// std::invalid_argument when `exported` is not such a trace.
  void merge(const std::string& exported, double clock_offset_us);
  /// Writes the trace to `path` atomically: events sorted by track and time, flows of which one
  /// end is missing (cut by the cap, or a process that never sent its events) left out.
  void write(const std::string& path) const;

 private:
  detail::trace_track_buffer* add_track(const std::string& process, const std::string& name, int process_id,
                                        bool merged);
  bool admit(const trace_track& track, int64_t tick);
  void push(const trace_track& track, const detail::trace_event& event);
  const char* intern(const std::string& text);
  std::string render(bool whole_flows_only) const;

  bool enabled_ = false;
  int64_t from_tick_ = 0, to_tick_ = -1;
  std::size_t max_events_ = 0;
  std::atomic<std::size_t> admitted_{0};
  std::atomic<std::size_t> dropped_{0};
  mutable std::mutex registry_;  // guards tracks_, processes_, strings_
  std::vector<std::unique_ptr<detail::trace_track_buffer>> tracks_;
  std::vector<std::string> processes_;  // process id → name
  std::set<std::string> strings_;       // names of merged events (stable addresses)
};

/// One ping of a remote process: local clock when sent, the remote clock when it answered, local
/// clock when the answer came back (microseconds, trace_time_us).
struct ping_sample {
  double send_us = 0, remote_us = 0, receive_us = 0;
};

/// What to add to a remote timestamp to place it on the local clock, ± uncertainty_us.
struct clock_offset {
  double offset_us = 0;
  double uncertainty_us = 0;
};

/// The offset from the ping with the smallest round trip (the least queueing):
/// offset = (send + receive)/2 − remote, uncertainty = (receive − send)/2. Throws
/// std::invalid_argument when there is no sample or one comes back before it was sent.
clock_offset estimate_clock_offset(const std::vector<ping_sample>& samples);

}  // namespace petra::training

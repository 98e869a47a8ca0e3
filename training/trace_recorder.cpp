// The trace recorder: per-track event buffers behind their own locks, a window of ticks, a cap on
// events, and the clock-offset estimate that aligns another process's trace with this one.
#include "training/trace_recorder.hpp"

#include <algorithm>
#include <stdexcept>

#include "training/trace_event.hpp"

namespace petra::training {
namespace {
using detail::trace_event;
using detail::trace_track_buffer;

int64_t to_ns(trace_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

}  // namespace

double trace_time_us(trace_clock::time_point time) { return static_cast<double>(to_ns(time)) / 1000.0; }

uint64_t trace_flow_id(flow_kind kind, int stage, int64_t tick, int64_t micro_batch_id) {
  if (stage < 0 || stage >= 512)
    throw std::invalid_argument("trace_flow_id: stage " + std::to_string(stage) + " is outside [0, 512)");
  constexpr uint64_t mask21 = (uint64_t{1} << 21) - 1;
  return (static_cast<uint64_t>(kind) << 51) | (static_cast<uint64_t>(stage) << 42) |
         ((static_cast<uint64_t>(tick) & mask21) << 21) | (static_cast<uint64_t>(micro_batch_id) & mask21);
}

trace_recorder::trace_recorder() = default;

trace_recorder::trace_recorder(int64_t from_tick, int64_t to_tick, std::size_t max_events)
    : enabled_(true), from_tick_(from_tick), to_tick_(to_tick), max_events_(max_events) {
  if (to_tick < from_tick)
    throw std::invalid_argument("trace window [" + std::to_string(from_tick) + ", " +
                                std::to_string(to_tick) + "] is empty: give from ≤ to");
}

trace_recorder::~trace_recorder() = default;

trace_track_buffer* trace_recorder::add_track(const std::string& process, const std::string& name,
                                              int process_id, bool merged) {
  auto buffer = std::make_unique<trace_track_buffer>();
  buffer->process = process;
  buffer->name = name;
  buffer->process_id = process_id;
  buffer->track_id = static_cast<int>(tracks_.size());
  buffer->merged = merged;
  tracks_.push_back(std::move(buffer));
  return tracks_.back().get();
}

trace_track trace_recorder::track(const std::string& process, const std::string& name) {
  trace_track handle;
  if (!enabled_) return handle;
  std::lock_guard<std::mutex> guard(registry_);
  for (const auto& t : tracks_)
    if (!t->merged && t->process == process && t->name == name) {
      handle.buffer_ = t.get();
      return handle;
    }
  int process_id = -1;
  for (const auto& t : tracks_)
    if (!t->merged && t->process == process) process_id = t->process_id;
  if (process_id < 0) {
    process_id = static_cast<int>(processes_.size());
    processes_.push_back(process);
  }
  handle.buffer_ = add_track(process, name, process_id, false);
  return handle;
}

bool trace_recorder::admit(const trace_track& track, int64_t tick) {
  return track.buffer_ != nullptr && tick >= from_tick_ && tick <= to_tick_;
}

void trace_recorder::push(const trace_track& track, const trace_event& event) {
  trace_track_buffer& buffer = *track.buffer_;
  std::lock_guard<std::mutex> guard(buffer.lock);
  if (buffer.quota == 0) {
    // Take a block of the cap for this track: at most what is left of it.
    std::size_t taken = admitted_.load(std::memory_order_relaxed), grant = 0;
    do {
      grant = std::min(trace_track_buffer::quota_block, max_events_ - std::min(taken, max_events_));
    } while (grant > 0 && !admitted_.compare_exchange_weak(taken, taken + grant, std::memory_order_relaxed));
    if (grant == 0) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    buffer.quota = grant;
  }
  --buffer.quota;
  buffer.append(event);
}

void trace_recorder::span(trace_track track, const char* name, trace_clock::time_point begin,
                          trace_clock::time_point end, int64_t tick, std::initializer_list<trace_arg> args) {
  if (!admit(track, tick)) return;
  if (args.size() > detail::max_trace_args)
    throw std::invalid_argument(std::string("trace span \"") + name + "\": " + std::to_string(args.size()) +
                                " args, at most 3");
  trace_event e;
  e.phase = 'X';
  e.name = name;
  e.ts_ns = to_ns(begin);
  e.dur_ns = std::max<int64_t>(0, to_ns(end) - e.ts_ns);
  e.tick = tick;
  for (const trace_arg& a : args) e.args[e.arg_count++] = a;
  push(track, e);
}

void trace_recorder::flow_out(trace_track track, uint64_t flow_id, trace_clock::time_point time,
                              int64_t tick) {
  if (!admit(track, tick)) return;
  trace_event e;
  e.phase = 's';
  e.flow_id = flow_id;
  e.ts_ns = to_ns(time);
  e.tick = tick;
  push(track, e);
}

void trace_recorder::flow_in(trace_track track, uint64_t flow_id, trace_clock::time_point time,
                             int64_t tick) {
  if (!admit(track, tick)) return;
  trace_event e;
  e.phase = 'f';
  e.flow_id = flow_id;
  e.ts_ns = to_ns(time);
  e.tick = tick;
  push(track, e);
}

void trace_recorder::counter(trace_track track, const char* name, trace_clock::time_point time, int64_t tick,
                             double value) {
  if (!admit(track, tick)) return;
  trace_event e;
  e.phase = 'C';
  e.name = name;
  e.ts_ns = to_ns(time);
  e.tick = tick;
  e.value = value;
  push(track, e);
}

std::size_t trace_recorder::size() const {
  std::lock_guard<std::mutex> guard(registry_);
  std::size_t total = 0;
  for (const auto& t : tracks_) {
    std::lock_guard<std::mutex> track_guard(t->lock);
    total += t->count;
  }
  return total;
}

const char* trace_recorder::intern(const std::string& text) { return strings_.insert(text).first->c_str(); }

clock_offset estimate_clock_offset(const std::vector<ping_sample>& samples) {
  if (samples.empty()) throw std::invalid_argument("estimate_clock_offset: no ping samples");
  const ping_sample* best = nullptr;
  for (const auto& s : samples) {
    if (s.receive_us < s.send_us)
      throw std::invalid_argument("estimate_clock_offset: a ping came back (" + std::to_string(s.receive_us) +
                                  " µs) before it was sent (" + std::to_string(s.send_us) + " µs)");
    if (best == nullptr || s.receive_us - s.send_us < best->receive_us - best->send_us) best = &s;
  }
  return {(best->send_us + best->receive_us) / 2 - best->remote_us, (best->receive_us - best->send_us) / 2};
}

}  // namespace petra::training

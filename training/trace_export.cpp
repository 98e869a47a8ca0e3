// The recorder's Chrome trace JSON: X spans, s/f flows bound to their enclosing spans, C counters,
// M names; each track sorted by time, flows missing an end left out; and merging another
// process's export onto this clock.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

#include "compute/serialize/atomic_file.hpp"
#include "training/trace_event.hpp"
#include "training/trace_recorder.hpp"

namespace petra::training {
namespace {
using detail::trace_event;
using detail::trace_track_buffer;

const char* flow_name(uint64_t flow_id) {
  static const char* const names[] = {"forward", "backward", "label", "credit"};
  return names[(flow_id >> 51) & 3];
}

void append_string(std::string& out, const char* text) {
  out += '"';
  for (const char* c = text; *c != '\0'; ++c) {
    const unsigned char u = static_cast<unsigned char>(*c);
    if (*c == '"' || *c == '\\') {
      out += '\\';
      out += *c;
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += *c;
    }
  }
  out += '"';
}

/// Nanoseconds as exact microseconds with three decimals ("1234.567").
void append_us(std::string& out, int64_t ns) {
  char text[48];
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::snprintf(text, sizeof text, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", magnitude / 1000,
                magnitude % 1000);
  out += text;
}

void append_int(std::string& out, int64_t value) { out += std::to_string(value); }

/// The fields every event shares: "ph", "name", "pid", "tid", "ts".
void append_head(std::string& out, char phase, const std::string& name, const trace_track_buffer& track,
                 int64_t ts_ns) {
  out += "{\"ph\":\"";
  out += phase;
  out += "\",\"name\":";
  append_string(out, name.c_str());
  out += ",\"pid\":";
  append_int(out, track.process_id + 1);
  out += ",\"tid\":";
  append_int(out, track.track_id + 1);
  out += ",\"ts\":";
  append_us(out, ts_ns);
}

void append_event(std::string& out, const trace_track_buffer& track, const trace_event& e) {
  switch (e.phase) {
    case 'X':
      append_head(out, 'X', e.name, track, e.ts_ns);
      out += ",\"cat\":\"petra\",\"dur\":";
      append_us(out, e.dur_ns);
      out += ",\"args\":{\"tick\":";
      append_int(out, e.tick);
      for (int a = 0; a < e.arg_count; ++a) {
        out += ',';
        append_string(out, e.args[a].key);
        out += ':';
        append_int(out, e.args[a].value);
      }
      out += "}}";
      break;
    case 's':
    case 'f':
      append_head(out, e.phase, flow_name(e.flow_id), track, e.ts_ns);
      out += ",\"cat\":\"message\",\"id\":";
      out += std::to_string(e.flow_id);
      out += ",\"bp\":\"e\",\"args\":{\"tick\":";
      append_int(out, e.tick);
      out += "}}";
      break;
    case 'C': {
      // Counters belong to a process in the viewers: the name says which track's it is.
      append_head(out, 'C', e.full_name ? std::string(e.name) : track.name + " " + e.name, track, e.ts_ns);
      char value[40];
      std::snprintf(value, sizeof value, "%.17g", std::isfinite(e.value) ? e.value : 0.0);
      out += ",\"args\":{\"value\":";
      out += value;
      out += "}}";
      break;
    }
    default:
      break;
  }
}

/// A name ("process_name"/"thread_name") and a sort index of a process or a track: two M events.
void append_metadata(std::string& out, bool process, int pid, int tid, const std::string& name, int sort) {
  for (int part = 0; part < 2; ++part) {
    out += part == 0 ? "" : ",\n";
    out += "{\"ph\":\"M\",\"name\":\"";
    out += process ? (part == 0 ? "process_name" : "process_sort_index")
                   : (part == 0 ? "thread_name" : "thread_sort_index");
    out += "\",\"pid\":";
    append_int(out, pid);
    out += ",\"tid\":";
    append_int(out, tid);
    if (part == 0) {
      out += ",\"args\":{\"name\":";
      append_string(out, name.c_str());
    } else {
      out += ",\"args\":{\"sort_index\":";
      append_int(out, sort);
    }
    out += "}}";
  }
}

int64_t json_ns(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  if (it == event.end() || !it->is_number())
    throw std::invalid_argument(std::string("trace event without a numeric \"") + key +
                                "\": " + event.dump());
  return std::llround(it->get<double>() * 1000.0);
}

}  // namespace

std::string trace_recorder::render(bool whole_flows_only) const {
  std::lock_guard<std::mutex> guard(registry_);
  std::vector<std::vector<trace_event>> events(tracks_.size());
  for (size_t t = 0; t < tracks_.size(); ++t) {
    std::lock_guard<std::mutex> track_guard(tracks_[t]->lock);
    events[t] = tracks_[t]->copy();
  }
  std::unordered_map<uint64_t, uint8_t> flow_ends;  // bit 0: out, bit 1: in
  if (whole_flows_only)
    for (const auto& list : events)
      for (const auto& e : list)
        if (e.phase == 's' || e.phase == 'f') flow_ends[e.flow_id] |= e.phase == 's' ? 1 : 2;

  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"from_tick\":" + std::to_string(from_tick_) +
                    ",\"to_tick\":" + std::to_string(to_tick_) +
                    ",\"dropped_events\":" + std::to_string(dropped()) + "},\n\"traceEvents\":[\n";
  bool first = true;
  auto separate = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (size_t p = 0; p < processes_.size(); ++p) {
    separate();
    append_metadata(out, true, static_cast<int>(p) + 1, 0, processes_[p], static_cast<int>(p));
  }
  for (const auto& t : tracks_) {
    separate();
    append_metadata(out, false, t->process_id + 1, t->track_id + 1, t->name, t->track_id);
  }
  // Tracks are already in (process, track) order by id; within a track, by time (a longer span
  // first, so that spans starting together nest).
  std::vector<size_t> order(tracks_.size());
  for (size_t t = 0; t < order.size(); ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tracks_[a]->process_id < tracks_[b]->process_id; });
  for (size_t t : order) {
    auto& list = events[t];
    std::stable_sort(list.begin(), list.end(), [](const trace_event& a, const trace_event& b) {
      return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.dur_ns > b.dur_ns;
    });
    for (const auto& e : list) {
      if (whole_flows_only && (e.phase == 's' || e.phase == 'f') && flow_ends[e.flow_id] != 3) continue;
      separate();
      append_event(out, *tracks_[t], e);
    }
  }
  out += "\n]}\n";
  return out;
}

std::string trace_recorder::export_json() const { return render(false); }

void trace_recorder::write(const std::string& path) const {
  const std::string text = render(true);
  write_file_atomically(path, [&](std::ostream& out) { out << text; });
}

void trace_recorder::merge(const std::string& exported, double clock_offset_us) {
  nlohmann::json trace;
  try {
    trace = nlohmann::json::parse(exported);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    throw std::invalid_argument(std::string("trace to merge is not JSON: ") + e.what());
  }
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw std::invalid_argument("trace to merge has no \"traceEvents\" array");
  const int64_t offset_ns = std::llround(clock_offset_us * 1000.0);

  std::lock_guard<std::mutex> guard(registry_);
  std::map<int64_t, int> process_of;                                    // their pid → our process id
  std::map<std::pair<int64_t, int64_t>, trace_track_buffer*> track_of;  // their (pid, tid) → our track
  auto process_for = [&](int64_t pid, const std::string& name) {
    auto it = process_of.find(pid);
    if (it != process_of.end()) return it->second;
    processes_.push_back(name.empty() ? "process " + std::to_string(pid) : name);
    return process_of[pid] = static_cast<int>(processes_.size()) - 1;
  };
  auto track_for = [&](int64_t pid, int64_t tid, const std::string& name) {
    auto it = track_of.find({pid, tid});
    if (it != track_of.end()) return it->second;
    const int process = process_for(pid, "");
    return track_of[{pid, tid}] = add_track(
               processes_[process], name.empty() ? "track " + std::to_string(tid) : name, process, true);
  };
  const auto& list = trace["traceEvents"];
  for (const auto& e : list)  // names first: they may come in any order
    if (e.is_object() && e.value("ph", "") == "M" && e.contains("args") && e["args"].contains("name")) {
      const std::string name = e["args"]["name"].get<std::string>();
      if (e.value("name", "") == "process_name") process_for(e.value("pid", int64_t{0}), name);
      if (e.value("name", "") == "thread_name")
        track_for(e.value("pid", int64_t{0}), e.value("tid", int64_t{0}), name);
    }
  for (const auto& e : list) {
    if (!e.is_object()) throw std::invalid_argument("trace event is not an object: " + e.dump());
    const std::string phase = e.value("ph", "");
    if (phase != "X" && phase != "s" && phase != "f" && phase != "C") continue;
    trace_track_buffer* track = track_for(e.value("pid", int64_t{0}), e.value("tid", int64_t{0}), "");
    trace_event event;
    event.phase = phase[0];
    event.ts_ns = json_ns(e, "ts") + offset_ns;
    event.name = intern(e.value("name", ""));
    const auto args = e.value("args", nlohmann::json::object());
    if (event.phase == 'X') {
      event.dur_ns = json_ns(e, "dur");
      for (auto a = args.begin(); a != args.end(); ++a) {
        if (!a.value().is_number_integer()) continue;
        if (a.key() == "tick")
          event.tick = a.value().get<int64_t>();
        else if (event.arg_count < detail::max_trace_args)
          event.args[event.arg_count++] = {intern(a.key()), a.value().get<int64_t>()};
      }
    } else if (event.phase == 'C') {
      event.full_name = true;
      event.value = args.value("value", 0.0);
    } else {
      if (!e.contains("id") || !e["id"].is_number_unsigned())
        throw std::invalid_argument("flow event without a numeric \"id\": " + e.dump());
      event.flow_id = e["id"].get<uint64_t>();
      event.tick = args.value("tick", int64_t{0});
    }
    std::lock_guard<std::mutex> track_guard(track->lock);
    track->append(event);
  }
}

}  // namespace petra::training

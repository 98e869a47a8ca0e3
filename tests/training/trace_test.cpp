// The trace recorder: what it writes is trace JSON whose spans are whole, flows have both ends and
// tracks are in time order; the tick window and the event cap hold; merging another process's
// export shifts it by exactly the clock offset; concurrent recording loses nothing.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/scratch_dir.hpp"
#include "training/trace_recorder.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using petra::training::clock_offset;
using petra::training::estimate_clock_offset;
using petra::training::flow_kind;
using petra::training::ping_sample;
using petra::training::trace_clock;
using petra::training::trace_flow_id;
using petra::training::trace_recorder;

using petra::testing::scratch_dir;

namespace {

/// A time point `us` microseconds after the clock's epoch (tests pick their own times).
trace_clock::time_point at_us(int64_t us) { return trace_clock::time_point(std::chrono::microseconds(us)); }

json read_json(const fs::path& file) {
  std::ifstream in(file);
  return json::parse(in);
}

/// What a written trace holds, after checking the invariants every trace must keep: spans have a
/// duration (X) or a matching B/E, timestamps rise along each track, and (`whole_flows`: a written
/// file, not an export) flow starts and ends pair up.
struct trace_summary {
  std::map<std::string, int> process_pids;            // process name → pid
  std::map<std::pair<int, int>, std::string> tracks;  // (pid, tid) → track name
  int spans = 0, flows = 0, counters = 0;
  std::vector<json> events;  // non-metadata events
};

trace_summary check_trace(const json& trace, bool whole_flows = true) {
  trace_summary s;
  REQUIRE(trace.is_object());
  REQUIRE(trace.contains("traceEvents"));
  REQUIRE(trace["traceEvents"].is_array());
  std::map<std::pair<int, int>, double> last_ts;
  std::map<std::pair<int, int>, int> open_spans;  // B without E yet
  std::map<uint64_t, std::pair<int, int>> flow_ends;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e.at("ph");
    const std::pair<int, int> track{e.at("pid").get<int>(), e.at("tid").get<int>()};
    if (ph == "M") {
      if (e["name"] == "process_name") s.process_pids[e["args"]["name"]] = track.first;
      if (e["name"] == "thread_name") s.tracks[track] = e["args"]["name"];
      continue;
    }
    s.events.push_back(e);
    const double ts = e.at("ts").get<double>();
    if (last_ts.count(track)) CHECK(ts >= last_ts[track]);  // each track in time order
    last_ts[track] = ts;
    if (ph == "X") {
      REQUIRE(e.contains("dur"));
      CHECK(e["dur"].get<double>() >= 0);
      ++s.spans;
    } else if (ph == "B") {
      ++open_spans[track];
    } else if (ph == "E") {
      CHECK(open_spans[track] > 0);
      --open_spans[track];
    } else if (ph == "s" || ph == "f") {
      CHECK(e.at("bp") == "e");
      auto& ends = flow_ends[e.at("id").get<uint64_t>()];
      (ph == "s" ? ends.first : ends.second) += 1;
      ++s.flows;
    } else if (ph == "C") {
      CHECK(e.at("args").at("value").is_number());
      ++s.counters;
    }
  }
  for (const auto& [track, open] : open_spans) CHECK(open == 0);
  for (const auto& [id, ends] : flow_ends) {
    if (!whole_flows) break;
    INFO("flow " << id);
    CHECK(ends.first == 1);
    CHECK(ends.second == 1);
  }
  for (const auto& [track, ts] : last_ts) CHECK(s.tracks.count(track) == 1);  // every track is named
  return s;
}

/// Two stages passing one micro-batch per tick forward, for ticks [first, last]: per tick a
/// forward span on each stage, a flow between them, and a mailbox counter.
void record_ticks(trace_recorder& recorder, int64_t first, int64_t last) {
  auto stage1 = recorder.track("coordinator", "stage 1");
  auto stage2 = recorder.track("coordinator", "stage 2");
  for (int64_t tick = first; tick <= last; ++tick) {
    const int64_t t0 = 1000 * tick;
    // Recorded out of time order on purpose: the writer sorts each track.
    recorder.span(stage2, "forward", at_us(t0 + 500), at_us(t0 + 900), tick, {{"micro_batch", tick}});
    recorder.span(stage1, "forward", at_us(t0), at_us(t0 + 400), tick, {{"micro_batch", tick}});
    const uint64_t id = trace_flow_id(flow_kind::forward, 0, tick, tick);
    recorder.flow_out(stage1, id, at_us(t0 + 390), tick);
    recorder.flow_in(stage2, id, at_us(t0 + 500), tick);
    recorder.counter(stage2, "mailbox", at_us(t0 + 450), tick, static_cast<double>(tick % 3));
  }
}

}  // namespace

TEST_CASE("trace: the written file is trace JSON with named tracks, whole spans and paired flows") {
  scratch_dir dir;
  trace_recorder recorder(0, 1000);
  REQUIRE(recorder.enabled());
  record_ticks(recorder, 0, 49);
  CHECK(recorder.size() == 50 * 5);
  recorder.write((dir.path / "trace.json").string());
  const auto s = check_trace(read_json(dir.path / "trace.json"));
  CHECK(s.spans == 100);
  CHECK(s.flows == 100);
  CHECK(s.counters == 50);
  REQUIRE(s.process_pids.count("coordinator") == 1);
  std::set<std::string> names;
  for (const auto& [track, name] : s.tracks) names.insert(name);
  CHECK(names == std::set<std::string>{"stage 1", "stage 2"});
  for (const auto& e : s.events)
    if (e["ph"] == "X") CHECK(e["args"]["micro_batch"] == e["args"]["tick"]);
  // Counters are per process in the viewers: their name says whose they are.
  for (const auto& e : s.events)
    if (e["ph"] == "C") CHECK(e["name"] == "stage 2 mailbox");
  CHECK_FALSE(fs::exists(dir.path / "trace.json.tmp"));
}

TEST_CASE("trace: only events whose tick lies in the window are kept") {
  scratch_dir dir;
  trace_recorder recorder(10, 19);
  CHECK_FALSE(recorder.records(9));
  CHECK(recorder.records(10));
  CHECK(recorder.records(19));
  CHECK_FALSE(recorder.records(20));
  record_ticks(recorder, 0, 39);
  CHECK(recorder.size() == 10 * 5);
  recorder.write((dir.path / "trace.json").string());
  const auto s = check_trace(read_json(dir.path / "trace.json"));
  CHECK(s.spans == 20);
  for (const auto& e : s.events) {
    if (e["ph"] == "C") continue;  // a counter's args are its value only
    const int64_t tick = e["args"]["tick"];
    CHECK(tick >= 10);
    CHECK(tick <= 19);
  }
  CHECK_THROWS_AS(trace_recorder(5, 4), std::invalid_argument);
}

TEST_CASE("trace: a disabled recorder records nothing and writes an empty trace") {
  scratch_dir dir;
  trace_recorder recorder;
  CHECK_FALSE(recorder.enabled());
  CHECK_FALSE(recorder.records(0));
  auto track = recorder.track("coordinator", "stage 1");
  CHECK_FALSE(track.valid());
  record_ticks(recorder, 0, 9);
  CHECK(recorder.size() == 0);
  recorder.write((dir.path / "trace.json").string());
  const auto s = check_trace(read_json(dir.path / "trace.json"));
  CHECK(s.events.empty());
}

TEST_CASE("trace: the event cap holds and counts what it refused") {
  {
    trace_recorder recorder(0, 2000, 1000);
    auto track = recorder.track("coordinator", "stage 1");
    for (int tick = 0; tick < 1500; ++tick)
      recorder.span(track, "forward", at_us(tick), at_us(tick + 1), tick);
    CHECK(recorder.size() == 1000);  // one track: exactly the cap
    CHECK(recorder.dropped() == 500);
  }
  trace_recorder recorder(0, 1000, 120);
  record_ticks(recorder, 0, 49);  // 250 events on two tracks
  CHECK(recorder.size() <= 120);
  CHECK(recorder.size() > 0);
  CHECK(recorder.size() + recorder.dropped() == 250);
}

TEST_CASE("trace: a flow with one end (cut by the cap or the window) is left out of the file") {
  scratch_dir dir;
  trace_recorder recorder(0, 100);
  auto a = recorder.track("coordinator", "stage 1");
  auto b = recorder.track("coordinator", "stage 2");
  recorder.span(a, "forward", at_us(0), at_us(10), 1);
  recorder.span(b, "forward", at_us(20), at_us(30), 1);
  recorder.flow_out(a, trace_flow_id(flow_kind::forward, 0, 1, 7), at_us(5), 1);
  recorder.flow_in(b, trace_flow_id(flow_kind::forward, 0, 1, 7), at_us(20), 1);
  recorder.flow_out(a, trace_flow_id(flow_kind::forward, 0, 2, 8), at_us(8), 1);  // never received
  CHECK(recorder.size() == 5);
  recorder.write((dir.path / "trace.json").string());
  const auto s = check_trace(read_json(dir.path / "trace.json"));
  CHECK(s.flows == 2);
  // The export keeps both: the other end may come with another process's events.
  const auto exported = check_trace(json::parse(recorder.export_json()), false);
  CHECK(exported.events.size() == 5);
}

TEST_CASE("trace: merging a node's export shifts it by exactly the offset and keeps its process") {
  scratch_dir dir;
  trace_recorder coordinator(0, 100), node(0, 100);
  auto loader = coordinator.track("coordinator", "loader");
  auto stage = node.track("node 127.0.0.1:7001", "stage 3");
  const uint64_t id = trace_flow_id(flow_kind::forward, 0, 4, 4);
  coordinator.span(loader, "hand-over", at_us(1000), at_us(1100), 4);
  coordinator.flow_out(loader, id, at_us(1050), 4);
  node.span(stage, "forward", at_us(500), at_us(800), 4, {{"micro_batch", 4}, {"weight_version", 2}});
  node.flow_in(stage, id, at_us(500), 4);
  node.counter(stage, "fifo", at_us(600), 4, 3);

  const json before = json::parse(node.export_json());
  const double offset_us = 700.25;
  coordinator.merge(node.export_json(), offset_us);
  CHECK(coordinator.size() == 5);
  coordinator.write((dir.path / "trace.json").string());
  const auto s = check_trace(read_json(dir.path / "trace.json"));
  REQUIRE(s.process_pids.count("coordinator") == 1);
  REQUIRE(s.process_pids.count("node 127.0.0.1:7001") == 1);
  const int node_pid = s.process_pids.at("node 127.0.0.1:7001");
  CHECK(node_pid != s.process_pids.at("coordinator"));
  CHECK(s.flows == 2);  // the flow crosses the processes and has both ends now

  std::map<std::string, double> node_ts_before, node_ts_after;
  for (const auto& e : before["traceEvents"])
    if (e["ph"] != "M") node_ts_before[e["ph"].get<std::string>()] = e["ts"].get<double>();
  for (const auto& e : s.events)
    if (e["pid"] == node_pid) {
      node_ts_after[e["ph"].get<std::string>()] = e["ts"].get<double>();
      if (e["ph"] == "X") {
        CHECK(e["dur"].get<double>() == doctest::Approx(300));
        CHECK(e["args"]["weight_version"] == 2);
        CHECK(e["args"]["tick"] == 4);
      }
      if (e["ph"] == "C") CHECK(e["name"] == "stage 3 fifo");  // not renamed twice
    }
  REQUIRE(node_ts_after.size() == 3);
  for (const auto& [ph, ts] : node_ts_before)
    CHECK(node_ts_after[ph] - ts == doctest::Approx(offset_us).epsilon(1e-12));
  CHECK(node_ts_after["X"] == 1200.25);  // 500 + 700.25, exactly (timestamps are kept in ns)

  CHECK_THROWS_AS(coordinator.merge("{\"traceEvents\": 3}", 0), std::invalid_argument);
  CHECK_THROWS_AS(coordinator.merge("not json", 0), std::invalid_argument);
}

TEST_CASE("trace: several threads recording at once lose nothing") {
  constexpr int threads = 4, ticks = 2000;
  trace_recorder recorder(0, ticks);
  auto shared = recorder.track("coordinator", "coordinator");
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&, w] {
      auto own = recorder.track("coordinator", "stage " + std::to_string(w + 1));
      for (int tick = 0; tick < ticks; ++tick) {
        const auto now = trace_clock::now();
        recorder.span(own, "forward", now, now + std::chrono::microseconds(1), tick);
        recorder.counter(shared, "credits", now, tick, tick);  // one track, every thread
      }
    });
  for (auto& t : workers) t.join();
  CHECK(recorder.size() == static_cast<size_t>(threads * ticks * 2));
  CHECK(recorder.dropped() == 0);
  const auto s = check_trace(json::parse(recorder.export_json()));
  CHECK(s.spans == threads * ticks);
  CHECK(s.counters == threads * ticks);
  CHECK(s.tracks.size() == threads + 1);
}

TEST_CASE("trace: flow ids differ for every message of a window") {
  std::set<uint64_t> ids;
  size_t count = 0;
  for (auto kind : {flow_kind::forward, flow_kind::backward, flow_kind::label, flow_kind::credit})
    for (int stage = 0; stage < 20; ++stage)
      for (int64_t tick = 1000000; tick < 1000040; ++tick)
        for (int64_t micro_batch = tick - 40; micro_batch < tick; ++micro_batch) {
          const uint64_t id = trace_flow_id(kind, stage, tick, micro_batch);
          CHECK(id < (uint64_t{1} << 53));
          ids.insert(id);
          ++count;
        }
  CHECK(ids.size() == count);
  CHECK_THROWS_AS(trace_flow_id(flow_kind::forward, 512, 0, 0), std::invalid_argument);
}

TEST_CASE("trace: the clock offset comes from the ping with the smallest round trip") {
  // The remote clock runs 5000 µs behind: remote = local − 5000 at the middle of each round trip.
  const std::vector<ping_sample> samples = {
      {100, 100 + 40 - 5000 + 25, 180},  // round trip 80, the reply answered late (+25): skewed
      {300, 300 + 10 - 5000, 320},       // round trip 20: the best
      {500, 500 + 50 - 5000 - 30, 600},  // round trip 100
  };
  const clock_offset offset = estimate_clock_offset(samples);
  CHECK(offset.offset_us == doctest::Approx(5000));
  CHECK(offset.uncertainty_us == doctest::Approx(10));
  CHECK_THROWS_AS(estimate_clock_offset({}), std::invalid_argument);
  CHECK_THROWS_AS(estimate_clock_offset({{100, 0, 90}}), std::invalid_argument);
}

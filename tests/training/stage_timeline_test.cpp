// A stage's timeline and wait accounting without an actor: waits counted once and split at an
// epoch's end, and the spans and flows a traced stage writes.
#include "training/stage_timeline.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

using namespace petra::training;
using namespace std::chrono_literals;

TEST_CASE("a wait counts once, for input or for a gradient, and an epoch's end splits it") {
  stage_timeline tl;
  tl.open(nullptr, "coordinator", 2);
  const auto t0 = trace_clock::now();
  tl.mark_idle(true, t0);
  tl.split_idle(t0 + 2s);  // the epoch's record ends inside the wait
  CHECK(tl.wait_input_seconds == doctest::Approx(2.0));
  tl.mark_idle(false, t0 + 2500ms);  // already waiting: the same wait goes on
  tl.end_idle(t0 + 3s);
  CHECK(tl.wait_input_seconds == doctest::Approx(3.0));
  CHECK(tl.wait_gradient_seconds == 0);
  tl.end_idle(t0 + 10s);  // no wait open: nothing counted
  CHECK(tl.wait_input_seconds == doctest::Approx(3.0));
  tl.mark_idle(false, t0 + 4s);
  tl.forward(7, t0 + 4500ms, t0 + 5s, 3, 1);  // work ends the wait where it begins
  CHECK(tl.wait_gradient_seconds == doctest::Approx(0.5));
  tl.split_idle(t0 + 20s);
  CHECK(tl.wait_gradient_seconds == doctest::Approx(0.5));
}

TEST_CASE("a traced stage writes its spans, flows and counters on its own track") {
  auto recorder = std::make_shared<trace_recorder>(0, 100);
  stage_timeline tl;
  tl.open(recorder, "coordinator", 1);
  const auto t0 = trace_clock::now();
  tl.mark_idle(true, t0);
  tl.forward(5, t0 + 1ms, t0 + 3ms, 4, 2);
  tl.backward(5, t0 + 4ms, t0 + 8ms, 1, {true, t0 + 6ms, t0 + 8ms, 12}, 1);
  tl.evaluate(0, t0 + 9ms, t0 + 10ms);
  tl.hand_over(6, t0 + 10ms, t0 + 11ms);
  tl.backward(500, t0 + 12ms, t0 + 13ms, 0, {}, 0);  // outside the traced window: not written
  const nlohmann::json trace = nlohmann::json::parse(recorder->export_json());
  std::multiset<std::string> events;  // "X forward", "C stage 2 fifo", "s forward", ...
  bool stage_two = false;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    if (ph == "M" && e["args"].value("name", "") == "stage 2") stage_two = true;
    if (ph != "M") events.insert(ph + " " + e.value("name", ""));
  }
  CHECK(stage_two);
  for (const char* span :
       {"wait for input", "forward", "rebuild + backward", "optimizer step", "evaluate", "hand-over"}) {
    CAPTURE(span);
    CHECK(events.count(std::string("X ") + span) == 1);
  }
  CHECK(events.count("C stage 2 fifo") == 2);
  std::size_t flows = 0;
  for (const std::string& e : events) flows += e[0] == 's' || e[0] == 'f';
  CHECK(flows == 4);  // forward in and out, backward in and out (stage 2 has a stage before it)
}

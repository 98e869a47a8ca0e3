// The stall wait counts only the time its process was awake to wait.
#include "training/awake_timer.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using petra::awake_timer;

TEST_CASE("a wait whose slices end on time expires after the limit") {
  awake_timer t(5s);
  int slices = 0;
  bool expired = false;
  while (!expired) {
    const awake_timer::duration asked = t.next_slice();
    REQUIRE(asked > 0s);
    expired = t.timed_out_after(asked, asked + 1ms);  // a timer fires a little late
    ++slices;
  }
  CHECK(slices == 5);
  CHECK(t.counted() >= 5s);
  CHECK(t.next_slice() == 0s);
}

TEST_CASE("a process frozen for longer than the limit wakes up with at most two slices counted") {
  awake_timer t(60s);
  const awake_timer::duration asked = t.next_slice();
  CHECK(asked == 1s);
  CHECK_FALSE(t.timed_out_after(asked, 240s));  // stopped for four minutes inside one slice
  CHECK(t.counted() == 2s);
  // ...and a real loss is still found: 58 more seconds of awake waiting end it.
  bool expired = false;
  int slices = 0;
  while (!expired) {
    expired = t.timed_out_after(t.next_slice(), t.next_slice());
    ++slices;
  }
  CHECK(slices == 58);
}

TEST_CASE("the last slice is what is left of the limit") {
  awake_timer t(2.5s);
  CHECK_FALSE(t.timed_out_after(t.next_slice(), 1s));
  CHECK_FALSE(t.timed_out_after(t.next_slice(), 1s));
  CHECK(t.next_slice() == awake_timer::duration(0.5));
  CHECK(t.timed_out_after(t.next_slice(), awake_timer::duration(0.5)));
}

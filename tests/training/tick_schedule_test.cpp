// The tick arithmetic every runtime shares: round trips, entry spacing and the loader's credits.
#include "training/tick_schedule.hpp"

#include <doctest/doctest.h>

#include "config/config.hpp"

using namespace petra;

TEST_CASE("a stage's round trip is 2(J - 1 - j) ticks, and backprop enters one micro-batch per 2J - 1") {
  CHECK(round_trip_ticks(0, 8) == 14);
  CHECK(round_trip_ticks(7, 8) == 0);
  CHECK(entry_spacing(method_kind::petra, 8) == 1);
  CHECK(entry_spacing(method_kind::backprop, 8) == 15);
}

TEST_CASE("the loader's credits: 1 for backprop, runtime.credits when set, else 2J - 1") {
  config::run_config c = config::load_config("ci_smoke");  // petra
  CHECK(loader_credits(c, 5) == 9);
  CHECK(loader_credits(c, 1) == 1);
  c.runtime.credits = 3;
  CHECK(loader_credits(c, 5) == 3);
  c.training.method = config::training_method::backprop;
  CHECK(loader_credits(c, 5) == 1);  // one micro-batch in flight, whatever runtime.credits says
}

TEST_CASE("a stage's FIFO window is its round trip and the one entering: 2(J - 1 - j) + 1") {
  CHECK(fifo_window(0, 8) == 15);
  CHECK(fifo_window(5, 8) == 5);
  CHECK(fifo_window(7, 8) == 1);  // the last stage runs a micro-batch's forward and backward in one tick
  CHECK(fifo_window(0, 1) == 1);
}

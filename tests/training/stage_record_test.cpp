// A stage's record of its epoch without an actor: busy time per epoch and per phase, the waits
// its timeline counted, the mailbox's peak, an epoch's restart and a migrated stage's carry-over.
#include "training/stage_record.hpp"

#include <doctest/doctest.h>

using namespace petra;
using namespace petra::training;
using namespace std::chrono_literals;

TEST_CASE("a stage's record: busy per epoch and phase, waits, peak and wall time, then a new epoch") {
  stage_record rec;
  stage_timeline tl;
  const auto t0 = std::chrono::steady_clock::now();
  rec.begin_phase(t0);
  rec.add_busy(1.5);
  rec.saw_mailbox(3);
  rec.saw_mailbox(2);
  rec.from_downstream(100);
  rec.from_downstream(50);
  tl.mark_idle(true, t0 + 2s);  // a wait open when the report is taken counts up to then
  stage_report r;
  rec.fill(r, tl, t0 + 5s);
  CHECK(r.busy_seconds == 1.5);
  CHECK(r.phase_busy_seconds == 1.5);
  CHECK(r.mailbox_peak == 3);
  CHECK(r.upstream_messages == 2);
  CHECK(r.upstream_bytes == 150);
  CHECK(r.wait_input_seconds == doctest::Approx(3.0));
  CHECK(r.wall_seconds == doctest::Approx(5.0));

  rec.restart_epoch(tl, t0 + 5s);
  rec.add_busy(0.5);
  rec.begin_phase(t0 + 6s);  // a new phase: its busy time from zero; the epoch's start stays
  rec.add_busy(0.25);
  stage_report next;
  rec.fill(next, tl, t0 + 7s);
  CHECK(next.busy_seconds == 0.75);
  CHECK(next.phase_busy_seconds == 0.25);
  CHECK(next.mailbox_peak == 0);
  CHECK(next.upstream_messages == 0);
  CHECK(next.wait_input_seconds == doctest::Approx(2.0));  // the same wait, from the epoch's start
  CHECK(next.wall_seconds == doctest::Approx(2.0));
}

TEST_CASE("a migrated stage's record goes on from the one it replaces") {
  stage_report earlier;
  earlier.busy_seconds = 4;
  earlier.mailbox_peak = 6;
  earlier.wait_input_seconds = 1;
  earlier.wait_gradient_seconds = 2;
  earlier.upstream_messages = 7;
  earlier.upstream_bytes = 700;
  earlier.wall_seconds = 10;
  stage_record rec;
  stage_timeline tl;
  const auto now = std::chrono::steady_clock::now();
  rec.saw_mailbox(2);
  rec.continue_from(earlier, tl, now);
  rec.add_busy(1);
  stage_report r;
  rec.fill(r, tl, now + 1s);
  CHECK(r.busy_seconds == 5);
  CHECK(r.mailbox_peak == 6);
  CHECK(r.wait_input_seconds == 1);
  CHECK(r.wait_gradient_seconds == 2);
  CHECK(r.upstream_messages == 7);
  CHECK(r.upstream_bytes == 700);
  CHECK(r.wall_seconds == doctest::Approx(11.0));
}

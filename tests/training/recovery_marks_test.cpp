// A stage's marks of its phase's stage-local recoveries: what is forgotten, what a re-issue takes in
// again, and what a new phase clears.
#include "training/recovery_marks.hpp"

#include <doctest/doctest.h>

using namespace petra;

TEST_CASE("lost micro-batches are forgotten up to the drop mark and by name, until their re-issue") {
  recovery_marks r;
  CHECK_FALSE(r.forgotten(0));
  r.drop_upto = 5;        // a stage after the lost ones: everything up to 5 entered them
  r.cancelled = {9, 12};  // a stage before them: these went in
  for (int64_t id : {0, 3, 5, 9, 12}) CHECK(r.forgotten(id));
  for (int64_t id : {6, 10, 13}) CHECK_FALSE(r.forgotten(id));
  CHECK_FALSE(r.forgotten(-1));  // a marker, never a micro-batch
  r.coming_again = {3, 9};       // the loader sends these again
  CHECK_FALSE(r.readmit(12));    // not re-issued: its forward is a late message of the lost stages
  CHECK(r.forgotten(12));
  CHECK(r.readmit(9));
  CHECK_FALSE(r.forgotten(9));  // taken in again from now on
  CHECK_FALSE(r.readmit(9));    // once
  CHECK(r.forgotten(3));        // its re-issue has not come yet
}

TEST_CASE("a new phase forgets nothing, and a hold stays") {
  recovery_marks r;
  r.held = true;
  r.drop_upto = 7;
  r.cancelled = {8};
  r.abandoned_cuts = 40;
  r.quiet_forward_below = r.quiet_backward_below = 12;
  r.coming_again = {8};
  r.readmitted = {2};
  r.reissue_tick[8] = 300;
  r.restart();
  CHECK(r.held);
  CHECK_FALSE(r.forgotten(7));
  CHECK_FALSE(r.forgotten(8));
  CHECK(r.drop_upto == -1);
  CHECK(r.abandoned_cuts == -1);
  CHECK(r.quiet_forward_below == -1);
  CHECK(r.quiet_backward_below == -1);
  CHECK(r.coming_again.empty());
  CHECK(r.readmitted.empty());
  CHECK(r.reissue_tick.empty());
}

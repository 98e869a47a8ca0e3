// A stall's diagnosis from where the stages say they stand, without an actor system: the link that
// lost a message in each protocol, forward gradients' derivatives, and a hung stage.
#include "training/stall_diagnosis.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace petra;

namespace {

std::vector<stage_standing> at_ticks(const std::vector<int64_t>& ticks) {
  std::vector<stage_standing> out;
  for (std::size_t j = 0; j < ticks.size(); ++j)
    out.push_back({static_cast<int32_t>(j), true, ticks[j], false, false});
  return out;
}

bool says(const run_failure& f, const std::string& text) {
  return std::string(f.what()).find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("lockstep: a forward input its predecessor has sent names the link into the stage") {
  std::vector<stage_standing> s = at_ticks({11, 10, 9});
  s[1].waiting_forward = true;
  const run_failure f = diagnose_stall(s, true, 30);
  CHECK(f.kind() == failure_kind::stall);
  CHECK(f.stage() == 1);
  CHECK(f.tick() == 10);
  CHECK(says(f, "no progress for 30 s (faults.stall_seconds): its forward input of tick 10 never came"));
  CHECK(says(f, "lost on the link 1 -> 2"));
  // A predecessor behind it has not sent it yet: not a lost message.
  s[0].tick = 9;
  CHECK(diagnose_stall(s, true, 30).stage() == -1);
}

TEST_CASE("lockstep: a backward input its successor has sent names the link back") {
  std::vector<stage_standing> s = at_ticks({12, 10, 10});
  s[1].waiting_backward = true;
  const run_failure f = diagnose_stall(s, true, 5);
  CHECK(f.stage() == 1);
  CHECK(f.tick() == 10);
  CHECK(says(f, "its backward input of tick 10 never came although stage 3 is at tick 10"));
  CHECK(says(f, "lost on the link 3 -> 2"));
}

TEST_CASE("async: the highest stage waiting for a backward names the link after it") {
  std::vector<stage_standing> s = at_ticks({40, 38, 36, 34});
  s[0].waiting_backward = s[1].waiting_backward = true;  // every stage upstream of the loss waits
  const run_failure f = diagnose_stall(s, false, 30);
  CHECK(f.stage() == 1);
  CHECK(f.tick() == -1);
  CHECK(says(f, "a message between stage 2 and stage 3 was lost"));
}

TEST_CASE("no stage waiting for a lost message: a stage hangs, and where each stands is said") {
  std::vector<stage_standing> s = at_ticks({7, 6});
  s[1].in_phase = false;
  const run_failure f = diagnose_stall(s, true, 30);
  CHECK(f.stage() == -1);
  CHECK(says(f, "no stage is waiting for a lost message (stage 1 at tick 7, stage 2 done): a stage hangs"));
}

TEST_CASE("forward gradients: derivatives lost on their way back from the loss actor") {
  std::vector<stage_standing> s = at_ticks({9, 8, 7});
  s[0].tick = 9;
  s[1].waiting_backward = true;
  s[2].waiting_backward = true;
  s[2].tick = 6;  // the earliest tick waiting: the one that lost them
  const run_failure lock = diagnose_stall(s, true, 30, true);
  CHECK(lock.stage() == 2);
  CHECK(lock.tick() == 6);
  CHECK(says(lock, "its derivatives (forward gradients) for tick 6 never came"));
  CHECK(says(lock, "lost on their way back from the loss actor to stage 3"));
  s[2].tick = 10;
  CHECK(diagnose_stall(s, true, 30, true).stage() == 1);
  // Async: the highest stage waiting.
  const run_failure async = diagnose_stall(s, false, 30, true);
  CHECK(async.stage() == 2);
  CHECK(says(async, "that micro-batch was lost on its way from stage 3 to the loss actor"));
  // A forward input lost on the link into a stage is named first, in lockstep.
  s[1].waiting_forward = true;
  s[1].tick = 8;
  const run_failure first = diagnose_stall(s, true, 30, true);
  CHECK(first.stage() == 1);
  CHECK(says(first, "lost on the link 1 -> 2"));
}

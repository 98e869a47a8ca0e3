// Stage-local recovery's decisions, without an actor system: each reason a failure is left to a
// global rollback, and what a recovery re-issues, from where the rebuilt stages start and which
// snapshots it gives up.
#include "training/local_recovery_plan.hpp"

#include <doctest/doctest.h>

using namespace petra;

TEST_CASE("only a lost or failed stage is recovered locally") {
  CHECK(is_stage_failure(failure_kind::injected_crash, 2));
  CHECK(is_stage_failure(failure_kind::lost_actor, 0));
  CHECK(is_stage_failure(failure_kind::stage_exception, 5));
  CHECK_FALSE(is_stage_failure(failure_kind::stall, 2));
  CHECK_FALSE(is_stage_failure(failure_kind::unreachable, 2));
  CHECK_FALSE(is_stage_failure(failure_kind::bad_reply, 2));
  CHECK_FALSE(is_stage_failure(failure_kind::injected_crash, -1));
  CHECK(local_recovery_refusal(failure_kind::stall, 3, {}, false, 0) ==
        "the failure is not a lost or failed stage");
  CHECK(local_recovery_refusal(failure_kind::lost_actor, -1, {}, true, 0) ==
        "the failure is not a lost or failed stage");
}

TEST_CASE("lost stages that are not neighbours are refused") {
  CHECK(local_recovery_refusal(failure_kind::lost_actor, 1, {1, 3}, false, 0) ==
        "the lost stages are not neighbours");
  CHECK(local_recovery_refusal(failure_kind::lost_actor, 1, {1, 2, 3}, false, 0).empty());
}

TEST_CASE("stage 1 lost is refused in lockstep and in a phase resumed from a snapshot, not otherwise") {
  CHECK(local_recovery_refusal(failure_kind::injected_crash, 0, {0}, true, 0) ==
        "stage 1 is lost (lockstep: it holds the run's count of ticks run)");
  CHECK(local_recovery_refusal(failure_kind::injected_crash, 0, {0, 1}, false, 40) ==
        "stage 1 is lost in a phase resumed from a snapshot (its count from before went with it)");
  CHECK(local_recovery_refusal(failure_kind::injected_crash, 0, {0, 1}, false, 0).empty());
  CHECK(local_recovery_refusal(failure_kind::injected_crash, 1, {1}, true, 40).empty());
}

TEST_CASE("evaluation batches inside the lost stages are refused") {
  held_positions at;
  at.before_evals = 3;
  at.scored_evals = 2;
  CHECK(plan_local_recovery(3, 8, false, 0, 100, at).refused ==
        "evaluation batches were inside the lost stages");
  at.scored_evals = 3;
  CHECK(plan_local_recovery(3, 8, false, 0, 100, at).refused.empty());
}

TEST_CASE("lockstep refuses an epoch's last micro-batch inside the lost stages, async re-issues it") {
  held_positions at;
  at.before_tick = at.after_tick = 30;
  at.feed_tick = 30;
  at.cancel = {97, 99, 98};
  CHECK(plan_local_recovery(3, 8, true, 200, 100, at).refused ==
        "micro-batch 99, an epoch's last, was inside the lost stages");
  const local_recovery_plan async = plan_local_recovery(3, 8, false, 0, 100, at);
  CHECK(async.refused.empty());
  CHECK(async.reissue == std::vector<int64_t>{97, 98, 99});  // in their order in the epoch
}

TEST_CASE("lockstep refuses a failure before the pipeline filled") {
  held_positions at;
  at.before_tick = 0;
  at.after_tick = 2;
  CHECK(plan_local_recovery(3, 8, true, 200, 100, at).refused ==
        "the failure came before the pipeline filled");
  at.before_tick = 1;
  CHECK(plan_local_recovery(3, 8, true, 200, 100, at).start == 0);  // a tick before the earlier neighbour
}

TEST_CASE("async re-issues every cancelled micro-batch and gives up the snapshots from the last marker") {
  held_positions at;
  at.feed_tick = 57;  // the last cut marker the loader sent
  at.before_tick = 40;
  at.cancel = {12, 10, 11};
  const local_recovery_plan p = plan_local_recovery(7, 8, false, 0, 100, at);
  CHECK(p.refused.empty());
  CHECK(p.reissue == std::vector<int64_t>{10, 11, 12});
  CHECK(p.reissue_tick == -1);
  CHECK(p.ticks == -1);
  CHECK(p.abandon == 57);
  CHECK(p.lost == 0);
}

TEST_CASE("lockstep re-issues after the planned ticks, and grows the phase by them and a drain") {
  held_positions at;
  at.feed_tick = 50;
  at.before_tick = 44;
  at.after_tick = 41;
  at.cancel = {40, 38, 39};
  const local_recovery_plan p = plan_local_recovery(4, 8, true, 200, 100, at);
  CHECK(p.refused.empty());
  CHECK(p.reissue == std::vector<int64_t>{38, 39, 40});
  CHECK(p.reissue_tick == 200);
  CHECK(p.ticks == 200 + 3 + 14);  // three re-issued, the last one's round trip through 8 stages
  CHECK(p.start == 40);            // a tick before the earlier neighbour
  CHECK(p.abandon == 200);         // every cut left in the phase
  CHECK(p.lost == 0);
  // The last stage lost: no stage after it, so the one before sets the start.
  CHECK(plan_local_recovery(7, 8, true, 200, 100, at).start == 43);
}

TEST_CASE("lockstep near the phase's end loses what was inside the lost stages instead") {
  held_positions at;
  at.feed_tick = 192;  // 192 + 8 stages is not short of 200 ticks: a stage may have ended the phase
  at.before_tick = 190;
  at.after_tick = 188;
  at.cancel = {180, 181};
  const local_recovery_plan p = plan_local_recovery(4, 8, true, 200, 100, at);
  CHECK(p.refused.empty());
  CHECK(p.reissue.empty());
  CHECK(p.lost == 2);
  CHECK(p.reissue_tick == -1);
  CHECK(p.ticks == -1);
  CHECK(p.abandon == 190 + 8);  // every cut any stage may have run
  at.feed_tick = 191;
  CHECK(plan_local_recovery(4, 8, true, 200, 100, at).reissue.size() == 2);
}

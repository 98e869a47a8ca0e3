// The lockstep protocol of a stage actor: tick t runs when its forward and backward inputs for t
// are there; what it sends at tick t is for tick t + 1 (plus any injected link delay).
#pragma once

#include <map>
#include <optional>

#include "actors/link_faults.hpp"
#include "actors/stage_core.hpp"
#include "training/cut.hpp"

namespace petra::detail {

struct lockstep_state {
  stage_core core;
  std::map<int64_t, forward_data> forwards;         // by tick
  std::map<int64_t, backward_data> backwards;       // by tick
  std::map<int64_t, derivatives_data> derivatives;  // forward_gradient, by tick (actors/fg_lockstep.hpp)
  std::optional<stage_cut> resume;                  // restored from a cut: its messages, for the next plan
  static inline const char* name = "petra.stage.lockstep";
};

using lockstep_self = stage_actor::stateful_pointer<lockstep_state>;

void on_plan(lockstep_self self, const phase_plan& plan);
void on_forward(lockstep_self self, forward_data in);
void on_backward(lockstep_self self, backward_data in);
void on_loss(lockstep_self self, loss_data in);
void advance(lockstep_self self);
stage_status status_of(const lockstep_state& st);
/// Stage-local recovery (actors/stage_recovery.cpp): stops at its tick and says where it
/// stands...
recovery_order on_hold(lockstep_self self);
/// ...then forgets the lost micro-batches (a rebuilt stage: starts at the order's tick, its lost
/// inputs as markers) and goes on.
void on_recover(lockstep_self self, const recovery_order& order);
/// The last stage's output awaiting the loss belonged to a lost micro-batch: its tick ends as one
/// without a forward.
void skip_loss(lockstep_self self);
/// Restores the stage from its part of a cut; the next plan (start_tick = the cut's tick) resumes
/// there with the part's messages for that tick.
void resume_from(lockstep_self self, const cut_part& part);

}  // namespace petra::detail

// The async protocol of a stage actor: messages are handled as they arrive, backward first (in the
// stage's FIFO order); the first stage returns a credit to the loader per finished micro-batch.
// Snapshots without a drain follow Chandy–Lamport markers (docs/design.md §4).
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>

#include "actors/link_faults.hpp"
#include "actors/stage_core.hpp"
#include "training/cut.hpp"
#include "training/recent_ids.hpp"

namespace petra::detail {

struct async_state {
  stage_core core;
  std::deque<forward_data> forwards;                 // arrival order
  std::map<int64_t, backward_data> backwards;        // by micro-batch: run in this stage's FIFO order
  std::map<int64_t, derivatives_data> derivatives;   // forward_gradient, by micro-batch (actors/fg_async.cpp)
  training::recent_ids seen_forward, seen_backward;  // to discard duplicates (the newest ids only)
  int64_t completed = 0;                             // first stage: micro-batches finished this phase
  // A cut (docs/design.md §4, Chandy–Lamport): the part taken when its marker came on the forward link,
  // completed by what arrives on the backward link until the next stage's marker (and, at the
  // last stage, by the loss actor's answer to the output it awaited).
  struct pending_cut {
    stage_cut part;
    int64_t tick = -1;
    bool waits_backward = false;
    std::vector<stage_epoch_report> reports_after;  // sent after this part, before the next cut's
  };
  std::deque<pending_cut> cuts;     // in marker order (cuts may overlap: each completes in turn)
  std::optional<stage_cut> resume;  // the part a resumed phase starts from
  static inline const char* name = "petra.stage.async";
};

using async_self = stage_actor::stateful_pointer<async_state>;

void on_plan(async_self self, const phase_plan& plan);
void on_forward(async_self self, forward_data in);
void on_backward(async_self self, backward_data in);
void on_loss(async_self self, loss_data in);
void advance(async_self self);
void resume_from(async_self self, const cut_part& part);
stage_status status_of(const async_state& st);
/// Stage-local recovery: stops working and says where the stage stands...
recovery_order on_hold(async_self self);
/// ...then forgets what the order says, takes over its counts, and goes on.
void on_recover(async_self self, const recovery_order& order);

}  // namespace petra::detail

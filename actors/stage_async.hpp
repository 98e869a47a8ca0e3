// The async protocol of a stage actor: messages are handled as they arrive, backward first (in the
// stage's FIFO order); the first stage returns a credit to the loader per finished micro-batch.
#pragma once

#include <deque>
#include <map>
#include <set>

#include "actors/stage_core.hpp"

namespace petra::detail {

struct async_state {
  stage_core core;
  std::deque<forward_data> forwards;           // arrival order
  std::map<int64_t, backward_data> backwards;  // by micro-batch: run in this stage's FIFO order
  std::set<int64_t> seen_forward, seen_backward;
  int64_t completed = 0;  // first stage: micro-batches finished this phase
  static inline const char* name = "petra.stage.async";
};

using async_self = stage_actor::stateful_pointer<async_state>;

void on_plan(async_self self, const phase_plan& plan);
void on_forward(async_self self, forward_data in);
void on_backward(async_self self, backward_data in);
void on_loss(async_self self, loss_data in);
void advance(async_self self);
stage_status status_of(const async_state& st);

}  // namespace petra::detail

// The stage actor's state and the small helpers its parts share (private to actors/).
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "actors/stage_actor.hpp"

namespace petra::detail {

using namespace messages;
using namespace atoms;
using clock_type = std::chrono::steady_clock;

struct stage_actor_state {
  stage_context ctx;
  int32_t count = 1;  // J
  caf::actor prev, next, loss, loader, coordinator;
  stage_faults faults;
  std::mt19937_64 fault_rng;

  bool in_phase = false;
  phase_plan plan;
  int64_t tick = 0;                 // lockstep: the next tick to run; async: forwards done
  int64_t completed = 0;            // async, first stage: micro-batches finished
  bool awaiting_loss = false;       // last stage: a loss request is out
  std::map<int64_t, forward_data> lockstep_forward;   // by tick
  std::map<int64_t, backward_data> lockstep_backward;
  std::deque<forward_data> async_forward;             // arrival order
  std::map<int64_t, backward_data> async_backward;    // by micro-batch: run in this stage's FIFO order
  std::set<int64_t> seen_forward, seen_backward;      // async duplicate detection

  // Measurements of the phase.
  std::map<int64_t, int64_t> forward_tick;      // micro-batch → tick of its forward
  std::map<int64_t, int64_t> delays, staleness;
  int64_t mailbox_peak = 0;
  double busy_seconds = 0;
  clock_type::time_point phase_start;
  stage_report events;  // the injected_* and duplicates_discarded counters
  std::vector<forward_data> early_forward;    // for a phase not planned here yet
  std::vector<backward_data> early_backward;

  bool is_first() const { return ctx.index == 0; }
  bool is_last() const { return ctx.index == count - 1; }
  bool faults_on() const { return plan.attempt == 0; }
  bool lockstep() const { return ctx.mode == runtime_mode::lockstep; }
};

using self_ptr = stage_actor::stateful_pointer<stage_actor_state>;

/// `x` on this stage's device (a no-op when it is there already).
inline activation on_device(stage_actor_state& st, const activation& x) {
  auto up = [&](const tensor& t) {
    return !t.defined() || t.where() == st.ctx.device->where() ? t : st.ctx.device->from_host(t);
  };
  return {up(x.x1), up(x.x2)};
}

inline tensor to_host(stage_actor_state& st, const tensor& t) {
  return !t.defined() || t.where().type == device_type::cpu ? t : st.ctx.device->to_host(t);
}

}  // namespace petra::detail

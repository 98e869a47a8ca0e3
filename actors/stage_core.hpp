// What the lockstep and async stage actors share (private to actors/): the stage's links, faults,
// phase and measurements, and the steps both protocols take — compute with the busy clock and
// the slow-down fault, send with the link faults, report failures and injected faults.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "actors/stage_actor.hpp"
#include "messages/errors.hpp"
#include "training/stage_window.hpp"

namespace petra::detail {

using namespace messages;
using namespace atoms;
using clock_type = std::chrono::steady_clock;

struct stage_core {
  stage_context ctx;
  stage_links links;
  stage_faults faults;
  std::mt19937_64 fault_rng;

  phase_plan plan;
  bool in_phase = false;
  int64_t tick = 0;            // lockstep: the next tick to run; async: forwards done
  bool awaiting_loss = false;  // last stage: its logits are at the loss actor
  activation logits;           // last stage: the forward output the loss answers
  int64_t logits_id = -1;

  int64_t mailbox_peak = 0;
  double busy_seconds = 0;
  training::trace_track track;  // this stage's timeline track (empty when not tracing)
  bool idle = false;            // waiting for input since idle_since
  clock_type::time_point idle_since;
  int64_t last_micro_batch = 0;  // what the timeline attributes a wait to
  stage_window_meter window;     // per-step metrics
  int64_t evals_done = 0;        // evaluation batches of this phase this stage passed on
  int64_t backwards_in_phase = 0;
  clock_type::time_point epoch_start;  // its record of the running epoch began
  clock_type::time_point phase_start;
  bool hold_epoch_reports = false;  // async: a cut's part is pending: epoch reports wait behind it
  std::vector<stage_epoch_report> held_epoch_reports;  // made since the latest pending cut
  std::vector<forward_data> early_forward;             // for a phase not planned here yet
  std::vector<backward_data> early_backward;
  // Stage-local recovery (DESIGN.md §6): held while the coordinator rebuilds lost stages; then the
  // micro-batches lost with them are forgotten here (late messages of theirs dropped, or in lockstep
  // run as markers).
  bool held = false;                  // (kept across a plan: a rebuilt stage is held before it gets one)
  int64_t drop_upto = -1;             // every micro-batch up to this one (stages after the lost ones)
  std::set<int64_t> cancelled;        // these (stages before the lost ones)
  int64_t last_forwarded = -1;        // the last training micro-batch this stage forwarded
  int64_t abandoned_cuts = -1;        // cuts up to this tick were given up (async: their markers are ignored)
  int64_t quiet_forward_below = -1;   // lockstep, a rebuilt stage: its neighbours hold its messages for
  int64_t quiet_backward_below = -1;  // ticks before these (or ran them): not sent again

  bool forgotten(int64_t id) const { return id >= 0 && (id <= drop_upto || cancelled.count(id) > 0); }
  bool is_first() const { return ctx.index == 0; }
  bool is_last() const { return ctx.index == links.count - 1; }
  bool faults_on() const { return plan.attempt == 0; }
  bool lockstep() const { return ctx.mode == config::runtime_mode::lockstep; }
  stamp stamp_for(int64_t id, int64_t tick_for) const {
    return stamp{id, tick_for, ctx.compute->weight_version(), ctx.index, plan.phase};
  }
};

/// Stage-local recovery, both protocols: holds the stage and says where it stands; its outstanding
/// micro-batches whose backward it does not hold (`held_backward` says) are the lost ones. A stage
/// outside a phase (one being rebuilt) is only held: its order, not its plan, starts it.
recovery_order hold_stage(stage_core& c, const std::function<bool(int64_t)>& held_backward);
/// Takes an order's lost micro-batches (checked against the running phase) and drops their
/// outstanding forwards; returns those dropped.
std::vector<int64_t> forget_lost(stage_core& c, const recovery_order& order);

/// Starts a phase: the plan, and the measurements from zero.
void begin_phase(stage_core& c, const phase_plan& plan);

/// The forward of micro-batch `id` at the stage's current tick, timed (busy time, the timeline's
/// span and message flows) and slowed down as faults.slow asks; true in `slowed` when it was.
activation timed_forward(stage_core& c, const activation& x, int64_t id, bool& slowed);
/// The backward of micro-batch `id` at the stage's current tick, timed and slowed down likewise.
stage::backward_result timed_backward(stage_core& c, const activation& rebuilt, const activation& grad,
                                      int64_t id, bool& slowed);

/// An evaluation batch (running BN statistics, the weights the stage has now), timed.
activation timed_evaluate(stage_core& c, const activation& x, int64_t index);

/// The stage has nothing to run: the timeline's "wait for input" starts (once).
void mark_idle(stage_core& c);
/// Mailbox depth on the timeline.
void trace_mailbox(stage_core& c, std::size_t waiting);

/// The stage's report of the phase so far.
stage_report make_report(stage_core& c);

/// The error a throwing stage quits with (injected crashes keep their code).
caf::error error_of(const std::exception& e);

/// Throws the injected crash when faults.crash_at_tick names this tick (first attempt only).
void maybe_crash(stage_core& c);

/// Lockstep: the tick a message sent at tick t on a link with this delay is for.
int64_t arrival_tick(const stage_core& c, int64_t t, int64_t link_delay);

/// The hand-over of DESIGN.md §5, the one place the stage actors cross a device boundary: an
/// activation of a message as this stage's backend can use it (an event wait, or a copy)...
activation take_in(stage_core& c, const activation& x);
/// A message's activation as host copies, for a cut (the message keeps it taken in: used once).
activation on_host(stage_core& c, activation& a);
/// ...and one of this stage's own, made ready for a consumer computing on `consumer` (the host,
/// `cpu`, for the loss actor, the coordinator, and any stage in another process); `id` is the
/// micro-batch it belongs to (for the timeline).
activation hand_out(stage_core& c, const activation& x, const device& consumer, int64_t id);

/// Where a message stands against the stage's phase: for a phase not planned here yet (a
/// neighbour started first), a late copy of an earlier or finished phase, or for now.
enum class arrival { early, stale, current };
arrival classify(const stage_core& c, const stamp& s);

template <class Self>
void report_fault(Self* self, stage_core& c, fault_kind kind) {
  self->send(c.links.coordinator, fault_event{c.ctx.index, kind, c.plan.generation});
}

/// Sorts an arriving message: one for a phase not planned here yet waits in `early`, a late copy
/// of an earlier or finished phase is discarded (and counted); true when it is for the running phase.
template <class Self, class Message>
bool admit(Self* self, stage_core& c, Message& in, std::vector<Message>& early) {
  switch (classify(c, in.s)) {
    case arrival::early:
      early.push_back(std::move(in));
      return false;
    case arrival::stale:
      report_fault(self, c, fault_kind::duplicate_discarded);
      return false;
    case arrival::current:
      break;
  }
  return true;
}

/// A failure: the coordinator hears what, where and its code; the actor quits with the error.
template <class Self>
void fail(Self* self, stage_core& c, const caf::error& err, const std::string& what, int64_t micro_batch) {
  self->send(c.links.coordinator,
             failure_report{c.ctx.index, c.tick, micro_batch, err.code(), what, c.plan.generation});
  self->quit(err);
}

/// A computation threw: an injected crash is counted as a fault; either way the stage fails.
template <class Self>
void fail_with(Self* self, stage_core& c, const std::exception& e, int64_t micro_batch) {
  const caf::error err = error_of(e);
  if (has_code(err, petra_errc::injected_crash)) report_fault(self, c, fault_kind::crash);
  fail(self, c, err, e.what(), micro_batch);
}

/// Reports a slowed computation (faults.slow) as an injected fault.
template <class Self>
void count_slowed(Self* self, stage_core& c, bool slowed) {
  if (slowed) report_fault(self, c, fault_kind::slow);
}

/// The stage's record of the epoch that just ended, for the coordinator; the next epoch's starts afresh.
stage_report take_epoch_report(stage_core& c);

/// After the backward of micro-batch `id`: per-step metrics every N optimizer steps of this stage,
/// and the epoch's report when `id` was its epoch's last micro-batch.
template <class Self>
void after_backward(Self* self, stage_core& c, const stage::backward_result& r, int64_t id) {
  const int every = c.ctx.metrics_every;
  if (every > 0 && r.stepped && c.ctx.compute->weight_version() % every == 0) {
    const stage_window w = c.window.take(*c.ctx.compute);
    self->send(c.links.coordinator, window_report{c.ctx.index, c.plan.generation, w.optimizer_steps,
                                                  w.staleness_mean, w.inversion_error_mean, id});
  }
  const int64_t per_epoch = c.plan.per_epoch;
  if (per_epoch > 0 && (id + 1) % per_epoch == 0) {
    stage_epoch_report r{static_cast<int32_t>(id / per_epoch), c.plan.generation, take_epoch_report(c)};
    if (c.hold_epoch_reports)  // after this stage's part of a cut, which has not gone yet
      c.held_epoch_reports.push_back(std::move(r));
    else
      self->send(c.links.coordinator, std::move(r));
  }
}

/// What the stage does with an evaluation batch that reached it: evaluates it and returns the
/// output for the next stage, or, at the last stage, sends its logits to the loss actor.
template <class Self>
activation evaluate_batch(Self* self, stage_core& c, int32_t epoch, int64_t index, const activation& x) {
  activation y = timed_evaluate(c, x, index);
  ++c.evals_done;
  if (!c.is_last()) return hand_out(c, y, c.links.next_device, -1);
  self->send(c.links.loss, logits_data{c.stamp_for(index, c.tick), hand_out(c, y, device{}, -1).x1, epoch});
  return {};
}

/// The end of this stage's phase, to the coordinator, once its device has done the work queued
/// for it (so that what the stages then report, device memory included, is settled).
template <class Self>
void finish_phase(Self* self, stage_core& c) {
  c.in_phase = false;
  c.ctx.device->synchronize();
  self->send(c.links.coordinator, phase_done{c.ctx.index, c.plan.generation});
}

inline bool chance(stage_core& c, double p) {
  return p > 0 && std::uniform_real_distribution<double>(0, 1)(c.fault_rng) < p;
}

/// Sends one message on a link, applying the faults of this stage (first attempt only). In lockstep
/// a link delay is in the stamp (ticks; `link_delay` is then in ticks); in async it is time
/// (milliseconds). Every injected fault is reported.
template <class Self, class Handle, class Message>
void emit(Self* self, stage_core& c, const Handle& to, Message msg, int64_t link_delay) {
  if (!c.faults_on()) {
    self->send(to, std::move(msg));
    return;
  }
  const bool marker = msg.s.micro_batch < 0;
  if (!marker && chance(c, c.faults.drop)) {
    report_fault(self, c, fault_kind::drop);
    return;
  }
  const int copies = !marker && chance(c, c.faults.duplicate) ? 2 : 1;
  if (copies == 2) report_fault(self, c, fault_kind::duplicate);
  if (c.lockstep() && !marker && link_delay > 0) report_fault(self, c, fault_kind::delay);  // in the stamp
  int64_t delay_ms = c.lockstep() ? 0 : link_delay;
  if (!c.lockstep() && c.faults.jitter_ms > 0)
    delay_ms += std::uniform_int_distribution<int64_t>(0, c.faults.jitter_ms)(c.fault_rng);
  if (!c.lockstep() && !marker && chance(c, c.faults.reorder)) {
    delay_ms += 1 + std::uniform_int_distribution<int64_t>(0, 19)(c.fault_rng);  // later messages overtake it
    report_fault(self, c, fault_kind::reorder);
  }
  for (int i = 0; i < copies; ++i) {
    if (delay_ms > 0) {
      report_fault(self, c, fault_kind::delay);
      self->delayed_send(to, std::chrono::milliseconds(delay_ms), msg);
    } else {
      self->send(to, msg);
    }
  }
}

}  // namespace petra::detail

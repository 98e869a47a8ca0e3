// What the lockstep and async stage actors share (private to actors/): the units of a stage's state
// (phase, inbox, work, outbox, the wait for the loss, recovery marks) and the steps both protocols
// take with them — admit what comes (early, stale, fenced, duplicate), compute through the stage's
// own work (training/stage_work: timed, slowed, handed over, measured), and send what it made (to
// the neighbours, the loss actor and the coordinator). Link faults and recovery have rooms of their
// own (link_faults, stage_recovery).
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "actors/stage_actor.hpp"
#include "actors/stage_inbox.hpp"
#include "actors/stage_outbox.hpp"
#include "actors/stage_phase.hpp"
#include "actors/stage_recovery.hpp"
#include "compute/pipeline/stage.hpp"
#include "messages/errors.hpp"
#include "training/arrival.hpp"
#include "training/outputs_ahead.hpp"
#include "training/stage_work.hpp"

namespace petra::detail {

using clock_type = std::chrono::steady_clock;

using namespace messages;
using namespace atoms;

/// A stage actor's state, as units with their own state and rules: what comes in is admitted by
/// the inbox (against the phase), computed by the work, and sent by the outbox (and the link's
/// faults); the last stage's output waits for its loss.
struct stage_core {
  stage_context ctx;
  stage_phase phase;          // the plan, the tick, what passed (actors/stage_phase.hpp)
  stage_inbox inbox;          // admit: early, stale, fenced or current (actors/stage_inbox.hpp)
  training::stage_work work;  // compute: forward, backward, evaluation, hand-over, measurements
  stage_outbox out;           // emit: the links, faults, failures and reports to the coordinator
  loss_wait loss;             // last stage: the output the loss actor answers
  recovery_marks recovery;    // stage-local recovery (docs/design.md §6)
  // Link faults (actors/link_faults): what this stage injects, its draws, the burst lost so far.
  stage_faults faults;
  std::mt19937_64 fault_rng;
  int64_t burst_dropped = 0;

  bool is_first() const { return ctx.index == 0; }
  bool is_last() const { return ctx.index == out.links.count - 1; }
  bool faults_on() const { return phase.faults_on(); }
  /// faults.slow where it applies (the first attempt), else 1.
  double slow() const { return faults_on() ? faults.slow : 1.0; }
  bool lockstep() const { return ctx.mode == config::runtime_mode::lockstep; }
  stamp stamp_for(int64_t id, int64_t tick_for) const {
    return stamp{id,        tick_for,         ctx.compute->weight_version(),
                 ctx.index, phase.plan.phase, out.links.generation};
  }
  /// What the inbox sorts a message by (training/arrival.hpp).
  training::arrival_context arrival_here() const {
    return {ctx.index, out.links.prev_generation, out.links.next_generation, phase.plan.phase, phase.running};
  }
};

/// Starts a phase: the plan, and the measurements from zero.
inline void begin_phase(stage_core& c, const phase_plan& plan) {
  c.phase.begin(plan);
  c.loss.awaiting = false;
  c.out.begin_phase();
  c.recovery.restart();
  c.work.begin_phase(c.ctx.trace, c.ctx.process, c.ctx.index);
}

/// Runs a computation `f` of the stage's through its work's busy clock and faults.slow (true in
/// `slowed` when it slowed down); [begin, end] is when it ran.
template <class F>
auto timed(stage_core& c, bool& slowed, clock_type::time_point& begin, clock_type::time_point& end, F&& f) {
  return c.work.timed(c.slow(), slowed, begin, end, std::forward<F>(f));
}

/// The forward of micro-batch `id` at the stage's current tick, timed, traced and slowed down as
/// faults.slow asks; true in `slowed` when it was.
inline activation timed_forward(stage_core& c, const activation& x, int64_t id, bool& slowed) {
  return c.work.forward(x, id, c.phase.tick, c.slow(), slowed);
}
/// The backward of micro-batch `id` at the stage's current tick, likewise; `input_ready` as
/// stage::backward's.
inline stage::backward_result timed_backward(stage_core& c, const activation& rebuilt, const activation& grad,
                                             int64_t id, bool& slowed,
                                             const std::function<void(const activation&)>& input_ready = {}) {
  stage::backward_result r = c.work.backward(rebuilt, grad, id, c.phase.tick, c.slow(), slowed, input_ready);
  ++c.phase.backwards;
  return r;
}

/// PaReprop across stages (runtime.overlap_rebuild): a backward message with a rebuilt output and
/// no gradient is that output sent ahead, so that the stage starts its last block's rebuild while
/// the stage after computes its first block's gradients. Only between stages of one process on one
/// device (a handle: no copy, no link), and never through the link's faults: the backward that
/// follows still carries both, and takes the rebuild only when it carries the same tensors.
inline bool is_sent_ahead(const backward_data& b) { return b.rebuilt.defined() && !b.grad.defined(); }

/// The stage's report of the phase so far.
inline stage_report make_report(stage_core& c) { return c.work.report(c.out.faults_sent()); }

using training::arrival;
/// Where a message stamped `s` stands against the stage's phase and wiring (training/arrival.hpp).
inline arrival classify(const stage_core& c, const stamp& s) {
  return training::classify_arrival(c.arrival_here(), s.sender, s.generation, s.phase);
}

/// Keeps a rebuilt output sent ahead (is_sent_ahead) and starts its rebuild when its backward is
/// next; of no use (dropped) when the stage does not overlap its rebuilds or the message is not for now.
inline void take_ahead(stage_core& c, backward_data in) {
  if (!c.ctx.compute->overlaps_rebuild() || classify(c, in.s) != arrival::current) return;
  c.work.keep_ahead(in.s.micro_batch, std::move(in.rebuilt));
}

template <class Self>
void report_fault(Self* self, stage_core& c, fault_kind kind) {
  c.out.fault(self, c.ctx.index, kind, c.phase.plan.generation);
}

/// Admits an arriving message: one for a phase not planned here yet waits in the inbox, a late copy
/// of an earlier or finished phase is discarded (and counted), as is one from a fenced neighbour;
/// true when it is for the running phase.
template <class Self, class Message>
bool admit(Self* self, stage_core& c, Message& in) {
  switch (c.inbox.sort(in, c.arrival_here())) {
    case arrival::early:
      return false;
    case arrival::stale:
      report_fault(self, c, fault_kind::duplicate_discarded);
      return false;
    case arrival::fenced:
      report_fault(self, c, fault_kind::fenced);
      return false;
    case arrival::current:
      break;
  }
  return true;
}

/// A failure: the coordinator hears what, where and its code; the actor quits with the error.
template <class Self>
void fail(Self* self, stage_core& c, const caf::error& err, const std::string& what, int64_t micro_batch) {
  self->send(c.out.links.coordinator, failure_report{c.ctx.index, c.phase.tick, micro_batch, err.code(), what,
                                                     c.phase.plan.generation});
  self->quit(err);
}

/// What sends micro-batch `id`'s rebuilt input ahead to the stage before (stamped for `tick_for`),
/// where that can help: this stage overlaps its rebuilds, the stage before is in this process and on
/// this device. Empty otherwise.
template <class Self>
std::function<void(const activation&)> ahead_sender(Self* self, stage_core& c, int64_t id, int64_t tick_for) {
  if (c.is_first() || !c.ctx.compute->overlaps_rebuild() ||
      !(c.out.links.prev_device == c.ctx.device->where()) || !c.out.links.prev ||
      c.out.links.prev.node() != self->node())
    return {};
  return [self, &c, id, tick_for](const activation& x) {
    self->send(c.out.links.prev,
               backward_data{c.stamp_for(id, tick_for), c.work.hand_out(x, c.out.links.prev_device, id), {}});
  };
}

/// After the backward of micro-batch `id`: per-step metrics every N optimizer steps of this stage,
/// and the epoch's report when `id` was its epoch's last micro-batch.
template <class Self>
void after_backward(Self* self, stage_core& c, const stage::backward_result& r, int64_t id) {
  c.work.rebuild_ahead();
  const int every = c.ctx.metrics_every;
  if (every > 0 && r.stepped && c.ctx.compute->weight_version() % every == 0) {
    const stage_window w = c.work.window.take(*c.ctx.compute);
    self->send(c.out.links.coordinator, window_report{c.ctx.index, c.phase.plan.generation, w.optimizer_steps,
                                                      w.staleness_mean, w.inversion_error_mean, id});
  }
  if (const std::optional<int32_t> epoch = c.phase.epoch_ended_by(id))
    c.out.epoch_report(self, stage_epoch_report{*epoch, c.phase.plan.generation,
                                                c.work.take_epoch_report(c.out.faults_sent())});
}

/// What the stage does with an evaluation batch that reached it: evaluates it and returns the
/// output for the next stage, or, at the last stage, sends its logits to the loss actor.
template <class Self>
activation evaluate_batch(Self* self, stage_core& c, int32_t epoch, int64_t index, const activation& x) {
  activation y = c.work.evaluate(x, index);
  ++c.phase.evals;
  if (!c.is_last()) return c.work.hand_out(y, c.out.links.next_device, -1);
  self->send(c.out.links.loss,
             logits_data{c.stamp_for(index, c.phase.tick), c.work.hand_out(y, device{}, -1).x1, epoch});
  return {};
}

/// The end of this stage's phase, to the coordinator, once its device has done the work queued
/// for it (so that what the stages then report, device memory included, is settled).
template <class Self>
void finish_phase(Self* self, stage_core& c) {
  c.phase.running = false;
  c.ctx.device->synchronize();
  self->send(c.out.links.coordinator, phase_done{c.ctx.index, c.phase.plan.generation});
}

/// Nothing to run: a wait starts (within a phase), for input when `for_input`, else for a gradient.
inline void mark_idle(stage_core& c, bool for_input) {
  if (c.phase.running) c.work.timeline.mark_idle(for_input, clock_type::now());
}

}  // namespace petra::detail

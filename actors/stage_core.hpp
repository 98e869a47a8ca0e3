// What the lockstep and async stage actors share (private to actors/): the stage's links, faults
// and phase, and the steps both protocols take with them — admit what comes (early, stale, fenced,
// duplicate), compute through the stage's own work (training/stage_work: timed, slowed, handed over,
// measured), and send what it made (to the neighbours, the loss actor and the coordinator). Link
// faults and recovery have rooms of their own (link_faults, stage_recovery).
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "actors/stage_actor.hpp"
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

struct stage_core {
  stage_context ctx;
  stage_links links;
  stage_faults faults;
  std::mt19937_64 fault_rng;
  int64_t burst_dropped = 0;  // of faults.drop_burst, lost so far

  phase_plan plan;
  bool in_phase = false;
  int64_t tick = 0;            // lockstep: the next tick to run; async: forwards done
  bool awaiting_loss = false;  // last stage: its logits are at the loss actor
  activation logits;           // last stage: the forward output the loss answers
  int64_t logits_id = -1;

  int64_t fault_events = 0;   // sent to the coordinator since the phase began (stage_report's)
  training::stage_work work;  // forward, backward, evaluation, hand-over, measurements
  int64_t evals_done = 0;     // evaluation batches of this phase this stage passed on
  int64_t backwards_in_phase = 0;
  bool hold_epoch_reports = false;  // async: a cut's part is pending: epoch reports wait behind it
  std::vector<stage_epoch_report> held_epoch_reports;  // made since the latest pending cut
  std::vector<forward_data> early_forward;             // for a phase not planned here yet
  std::vector<backward_data> early_backward;
  int64_t last_forwarded = -1;  // the highest training micro-batch id this stage forwarded
  recovery_marks recovery;      // stage-local recovery (docs/design.md §6)
  int32_t epoch_reported = -1;  // the phase's latest epoch this stage reported (a re-issue of its last
                                // micro-batch, lost after its backward here, reports nothing again)

  bool is_first() const { return ctx.index == 0; }
  bool is_last() const { return ctx.index == links.count - 1; }
  bool faults_on() const { return plan.attempt == 0; }
  /// faults.slow where it applies (the first attempt), else 1.
  double slow() const { return faults_on() ? faults.slow : 1.0; }
  bool lockstep() const { return ctx.mode == config::runtime_mode::lockstep; }
  stamp stamp_for(int64_t id, int64_t tick_for) const {
    return stamp{id, tick_for, ctx.compute->weight_version(), ctx.index, plan.phase, links.generation};
  }
};

/// Starts a phase: the plan, and the measurements from zero.
inline void begin_phase(stage_core& c, const phase_plan& plan) {
  c.plan = plan;
  c.tick = 0;
  c.in_phase = true;
  c.awaiting_loss = false;
  c.evals_done = 0;
  c.backwards_in_phase = 0;
  c.fault_events = 0;
  c.last_forwarded = -1;
  c.epoch_reported = -1;
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
  return c.work.forward(x, id, c.tick, c.slow(), slowed);
}
/// The backward of micro-batch `id` at the stage's current tick, likewise; `input_ready` as
/// stage::backward's.
inline stage::backward_result timed_backward(stage_core& c, const activation& rebuilt, const activation& grad,
                                             int64_t id, bool& slowed,
                                             const std::function<void(const activation&)>& input_ready = {}) {
  stage::backward_result r = c.work.backward(rebuilt, grad, id, c.tick, c.slow(), slowed, input_ready);
  ++c.backwards_in_phase;
  return r;
}

/// PaReprop across stages (runtime.overlap_rebuild): a backward message with a rebuilt output and
/// no gradient is that output sent ahead, so that the stage starts its last block's rebuild while
/// the stage after computes its first block's gradients. Only between stages of one process on one
/// device (a handle: no copy, no link), and never through the link's faults: the backward that
/// follows still carries both, and takes the rebuild only when it carries the same tensors.
inline bool is_sent_ahead(const backward_data& b) { return b.rebuilt.defined() && !b.grad.defined(); }

/// The stage's report of the phase so far.
inline stage_report make_report(stage_core& c) { return c.work.report(c.fault_events); }

using training::arrival;
/// Where a message stamped `s` stands against the stage's phase and wiring (training/arrival.hpp).
inline arrival classify(const stage_core& c, const stamp& s) {
  return training::classify_arrival(
      {c.ctx.index, c.links.prev_generation, c.links.next_generation, c.plan.phase, c.in_phase}, s.sender,
      s.generation, s.phase);
}

/// Keeps a rebuilt output sent ahead (is_sent_ahead) and starts its rebuild when its backward is
/// next; of no use (dropped) when the stage does not overlap its rebuilds or the message is not for now.
inline void take_ahead(stage_core& c, backward_data in) {
  if (!c.ctx.compute->overlaps_rebuild() || classify(c, in.s) != arrival::current) return;
  c.work.keep_ahead(in.s.micro_batch, std::move(in.rebuilt));
}

template <class Self>
void report_fault(Self* self, stage_core& c, fault_kind kind) {
  ++c.fault_events;
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
  self->send(c.links.coordinator,
             failure_report{c.ctx.index, c.tick, micro_batch, err.code(), what, c.plan.generation});
  self->quit(err);
}

/// What sends micro-batch `id`'s rebuilt input ahead to the stage before (stamped for `tick_for`),
/// where that can help: this stage overlaps its rebuilds, the stage before is in this process and on
/// this device. Empty otherwise.
template <class Self>
std::function<void(const activation&)> ahead_sender(Self* self, stage_core& c, int64_t id, int64_t tick_for) {
  if (c.is_first() || !c.ctx.compute->overlaps_rebuild() || !(c.links.prev_device == c.ctx.device->where()) ||
      !c.links.prev || c.links.prev.node() != self->node())
    return {};
  return [self, &c, id, tick_for](const activation& x) {
    self->send(c.links.prev,
               backward_data{c.stamp_for(id, tick_for), c.work.hand_out(x, c.links.prev_device, id), {}});
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
    self->send(c.links.coordinator, window_report{c.ctx.index, c.plan.generation, w.optimizer_steps,
                                                  w.staleness_mean, w.inversion_error_mean, id});
  }
  const int64_t per_epoch = c.plan.per_epoch;
  if (per_epoch > 0 && (id + 1) % per_epoch == 0 && id / per_epoch > c.epoch_reported) {
    c.epoch_reported = static_cast<int32_t>(id / per_epoch);
    stage_epoch_report r{c.epoch_reported, c.plan.generation, c.work.take_epoch_report(c.fault_events)};
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
  activation y = c.work.evaluate(x, index);
  ++c.evals_done;
  if (!c.is_last()) return c.work.hand_out(y, c.links.next_device, -1);
  self->send(c.links.loss,
             logits_data{c.stamp_for(index, c.tick), c.work.hand_out(y, device{}, -1).x1, epoch});
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

/// Nothing to run: a wait starts (within a phase), for input when `for_input`, else for a gradient.
inline void mark_idle(stage_core& c, bool for_input) {
  if (c.in_phase) c.work.timeline.mark_idle(for_input, clock_type::now());
}

}  // namespace petra::detail

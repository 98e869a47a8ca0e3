// What the lockstep and async stage actors share (private to actors/): the stage's links, faults,
// phase and measurements, and the steps both protocols take — compute with the busy clock and
// the slow-down fault, hand tensors over, report to the coordinator. Link faults, the timeline and
// recovery have rooms of their own (link_faults, training/stage_timeline, stage_recovery).
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <random>
#include <vector>

#include "actors/stage_actor.hpp"
#include "actors/stage_recovery.hpp"
#include "compute/pipeline/stage.hpp"
#include "messages/errors.hpp"
#include "training/outputs_ahead.hpp"
#include "training/stage_record.hpp"
#include "training/stage_timeline.hpp"
#include "training/stage_window.hpp"

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

  int64_t fault_events = 0;           // sent to the coordinator since the phase began (stage_report's)
  training::stage_record record;      // the epoch's measurements for its stage_report
  training::stage_timeline timeline;  // its spans (output.trace) and the epoch's wait times
  stage_window_meter window;          // per-step metrics
  int64_t evals_done = 0;             // evaluation batches of this phase this stage passed on
  int64_t backwards_in_phase = 0;
  bool hold_epoch_reports = false;  // async: a cut's part is pending: epoch reports wait behind it
  std::vector<stage_epoch_report> held_epoch_reports;  // made since the latest pending cut
  std::vector<forward_data> early_forward;             // for a phase not planned here yet
  std::vector<backward_data> early_backward;
  outputs_ahead ahead;          // rebuilt outputs sent ahead of their gradients, for backwards not next yet
  int64_t last_forwarded = -1;  // the highest training micro-batch id this stage forwarded
  recovery_marks recovery;      // stage-local recovery (docs/design.md §6)
  int32_t epoch_reported = -1;  // the phase's latest epoch this stage reported (a re-issue of its last
                                // micro-batch, lost after its backward here, reports nothing again)

  bool is_first() const { return ctx.index == 0; }
  bool is_last() const { return ctx.index == links.count - 1; }
  bool faults_on() const { return plan.attempt == 0; }
  bool lockstep() const { return ctx.mode == config::runtime_mode::lockstep; }
  stamp stamp_for(int64_t id, int64_t tick_for) const {
    return stamp{id, tick_for, ctx.compute->weight_version(), ctx.index, plan.phase, links.generation};
  }
};

/// faults.slow: after a computation that began at `begin`, waits (slow − 1) times as long as it
/// took (the first attempt only); true when it did.
bool slow_down(const stage_core& c, clock_type::time_point begin);

/// Runs a computation `f` of the stage's, counts it as busy time, and slows it down when faults.slow
/// asks to (true in `slowed` when it did); [begin, end] is when it ran. Every timed step of every
/// stage behaviour runs through here.
template <class F>
auto timed(stage_core& c, bool& slowed, clock_type::time_point& begin, clock_type::time_point& end, F&& f) {
  begin = clock_type::now();
  auto out = f();
  slowed = slow_down(c, begin);
  end = clock_type::now();
  c.record.add_busy(std::chrono::duration<double>(end - begin).count());
  return out;
}

/// Starts a phase: the plan, and the measurements from zero.
void begin_phase(stage_core& c, const phase_plan& plan);

/// The forward of micro-batch `id` at the stage's current tick, timed (busy time, the timeline's
/// span and message flows) and slowed down as faults.slow asks; true in `slowed` when it was.
activation timed_forward(stage_core& c, const activation& x, int64_t id, bool& slowed);
/// The backward of micro-batch `id` at the stage's current tick, timed and slowed down likewise;
/// `input_ready` as stage::backward's.
stage::backward_result timed_backward(stage_core& c, const activation& rebuilt, const activation& grad,
                                      int64_t id, bool& slowed,
                                      const std::function<void(const activation&)>& input_ready = {});

/// PaReprop across stages (runtime.overlap_rebuild): a backward message with a rebuilt output and
/// no gradient is that output sent ahead, so that the stage starts its last block's rebuild while
/// the stage after computes its first block's gradients. Only between stages of one process on one
/// device (a handle: no copy, no link), and never through the link's faults: the backward that
/// follows still carries both, and takes the rebuild only when it carries the same tensors.
bool is_sent_ahead(const backward_data& b);
/// Keeps `in` and starts its rebuild when its backward is the stage's next.
void take_ahead(stage_core& c, backward_data in);
/// Starts the rebuild of an output kept by take_ahead once its backward is next (after each
/// backward); forgets those whose micro-batch is no longer outstanding here.
void try_rebuild_ahead(stage_core& c);

/// An evaluation batch (running BN statistics, the weights the stage has now), timed.
activation timed_evaluate(stage_core& c, const activation& x, int64_t index);

/// The stage's report of the phase so far.
stage_report make_report(stage_core& c);

/// The hand-over of docs/design.md §5, the one place the stage actors cross a device boundary: an
/// activation of a message as this stage's backend can use it (an event wait, or a copy)...
activation take_in(stage_core& c, const activation& x);
/// A message's activation as host copies, for a cut (the message keeps it taken in: used once).
activation on_host(stage_core& c, activation& a);
/// ...and one of this stage's own, made ready for a consumer computing on `consumer` (the host,
/// `cpu`, for the loss actor, the coordinator, and any stage in another process); `id` is the
/// micro-batch it belongs to (for the timeline).
activation hand_out(stage_core& c, const activation& x, const device& consumer, int64_t id);

/// Where a message stands against the stage's phase: for a phase not planned here yet (a
/// neighbour started first), a late copy of an earlier or finished phase, or for now; or from a
/// neighbour of an older generation than the one wired (a stage declared lost that woke up: fenced).
enum class arrival { early, stale, current, fenced };
arrival classify(const stage_core& c, const stamp& s);

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

/// The stage's record of the epoch that just ended, for the coordinator; the next epoch's starts afresh.
stage_report take_epoch_report(stage_core& c);

/// A new cut of the model (drained, before any phase of this actor): the record of the running epoch
/// that the stage at this place kept goes on here — its counts and peaks, busy time, upstream
/// traffic, and its clock (the epoch began `earlier.wall_seconds` ago). The per-step window starts
/// now.
void continue_record(stage_core& c, const stage_report& earlier);

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
               backward_data{c.stamp_for(id, tick_for), hand_out(c, x, c.links.prev_device, id), {}});
  };
}

/// After the backward of micro-batch `id`: per-step metrics every N optimizer steps of this stage,
/// and the epoch's report when `id` was its epoch's last micro-batch.
template <class Self>
void after_backward(Self* self, stage_core& c, const stage::backward_result& r, int64_t id) {
  try_rebuild_ahead(c);
  const int every = c.ctx.metrics_every;
  if (every > 0 && r.stepped && c.ctx.compute->weight_version() % every == 0) {
    const stage_window w = c.window.take(*c.ctx.compute);
    self->send(c.links.coordinator, window_report{c.ctx.index, c.plan.generation, w.optimizer_steps,
                                                  w.staleness_mean, w.inversion_error_mean, id});
  }
  const int64_t per_epoch = c.plan.per_epoch;
  if (per_epoch > 0 && (id + 1) % per_epoch == 0 && id / per_epoch > c.epoch_reported) {
    c.epoch_reported = static_cast<int32_t>(id / per_epoch);
    stage_epoch_report r{c.epoch_reported, c.plan.generation, take_epoch_report(c)};
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

/// The timeline of the stage's steps (training/stage_timeline), with what the stage knows of them.
inline void trace_forward(stage_core& c, int64_t id, clock_type::time_point begin,
                          clock_type::time_point end) {
  c.timeline.forward(id, begin, end, c.tick, c.ctx.compute->outstanding());
}
inline void trace_backward(stage_core& c, const stage::backward_result& r, int64_t id,
                           clock_type::time_point begin, clock_type::time_point end) {
  const int64_t version = c.ctx.compute->weight_version();
  c.timeline.backward(id, begin, end, version - r.forward_version,
                      {r.stepped, r.step_begin, r.step_end, version}, c.ctx.compute->outstanding());
}
/// Nothing to run: a wait starts (within a phase), for input when `for_input`, else for a gradient.
inline void mark_idle(stage_core& c, bool for_input) {
  if (c.in_phase) c.timeline.mark_idle(for_input, clock_type::now());
}

}  // namespace petra::detail

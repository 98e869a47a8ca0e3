// The stage actor. Handlers are short: they queue what arrived and let `advance` run the
// compute stage as far as the inputs allow. No exception crosses the actor boundary: a failure
// becomes a failure_report to the coordinator, and the actor quits. Faults (DESIGN.md §6) are
// injected on the way out, on a phase's first attempt only, so that a replay runs clean.
#include "actors/stage_actor.hpp"

#include "actors/stage_actor_state.hpp"
#include "actors/stage_faults.hpp"

#include <caf/all.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "compute/pipeline/stage_state.hpp"

namespace petra {
namespace {

using namespace detail;

void note_mailbox(stage_actor_state& st) {
  const int64_t waiting = static_cast<int64_t>(st.lockstep_forward.size() + st.lockstep_backward.size() +
                                               st.async_forward.size() + st.async_backward.size());
  st.mailbox_peak = std::max(st.mailbox_peak, waiting);
}

void fail(self_ptr self, const std::string& what, int64_t micro_batch) {
  auto& st = self->state;
  caf::anon_send(st.coordinator, failure_report{st.ctx.index, st.tick, micro_batch, what, st.plan.generation});
  self->quit(caf::make_error(caf::sec::runtime_error, what));
}

activation run_forward(stage_actor_state& st, const forward_data& in) {
  st.forward_tick[in.s.micro_batch] = st.tick;
  return timed(st, [&] { return st.ctx.compute->forward(on_device(st, in.x), in.s.micro_batch); });
}

stage::backward_result run_backward(stage_actor_state& st, int64_t id, const activation& rebuilt,
                                    const activation& grad) {
  const int64_t version = st.ctx.compute->weight_version();
  stage::backward_result r =
      timed(st, [&] { return st.ctx.compute->backward(on_device(st, rebuilt), on_device(st, grad), id); });
  auto it = st.forward_tick.find(id);
  if (it != st.forward_tick.end()) {
    ++st.delays[st.tick - it->second];
    st.forward_tick.erase(it);
  }
  ++st.staleness[version - r.forward_version];
  return r;
}

stamp stamp_for(stage_actor_state& st, int64_t id, int64_t tick) {
  return stamp{id, tick, st.ctx.compute->weight_version(), st.ctx.index, st.plan.phase};
}

/// A message of an earlier phase: a late duplicate or delayed copy.
bool stale(stage_actor_state& st, const stamp& s) { return s.phase < st.plan.phase || (s.phase == st.plan.phase && !st.in_phase); }

/// A message of a phase whose plan has not reached this stage yet (a neighbour started first).
bool early(stage_actor_state& st, const stamp& s) { return s.phase > st.plan.phase; }

/// Lockstep: the tick a message sent at tick t on a link with this delay is for.
int64_t arrival_tick(stage_actor_state& st, int64_t t, int64_t link_delay) {
  return t + 1 + (st.faults_on() ? link_delay : 0);
}

void send_forward(self_ptr self, int64_t id, int64_t t, activation out) {
  auto& st = self->state;
  const int64_t at = st.lockstep() ? arrival_tick(st, t, st.faults.forward_delay) : -1;
  if (st.lockstep() && at >= st.plan.ticks) return;  // nothing is sent past the phase
  emit(self, caf::actor_cast<stage_actor>(st.next), forward_data{stamp_for(st, id, at), std::move(out)},
       st.faults.forward_delay);
}

/// Sends the backward result of micro-batch `id` upstream (or finishes it at the first stage).
void send_backward(self_ptr self, int64_t id, int64_t t, activation rebuilt, activation grad) {
  auto& st = self->state;
  if (!st.is_first()) {
    const int64_t at = st.lockstep() ? arrival_tick(st, t, st.faults.backward_delay) : -1;
    if (st.lockstep() && at >= st.plan.ticks) return;
    auto host = [&](const activation& a) { return activation{to_host(st, a.x1), to_host(st, a.x2)}; };
    emit(self, caf::actor_cast<stage_actor>(st.prev),
         backward_data{stamp_for(st, id, at), host(rebuilt), host(grad)}, st.faults.backward_delay);
  } else if (!st.lockstep()) {
    ++st.completed;
    self->send(caf::actor_cast<loader_actor>(st.loader), credit_atom_v, int64_t{1});
  }
}

void finish_phase(self_ptr self) {
  auto& st = self->state;
  st.in_phase = false;
  caf::anon_send(st.coordinator, done_atom_v, st.ctx.index, st.plan.generation);
}

void advance(self_ptr self);

/// Last stage: after the forward, the loss actor's answer; the backward follows at once.
void request_loss(self_ptr self, int64_t id, activation logits, std::function<void(stage::backward_result)> then) {
  auto& st = self->state;
  st.awaiting_loss = true;
  self->request(caf::actor_cast<loss_actor>(st.loss), std::chrono::seconds(120),
                logits_data{stamp_for(st, id, st.tick), to_host(st, logits.x1)})
      .await(
          [=](loss_data& answer) {
            auto& s = self->state;
            s.awaiting_loss = false;
            try {
              then(run_backward(s, id, logits, activation{answer.dlogits, {}}));
            } catch (const std::exception& e) {
              return fail(self, e.what(), id);
            }
            advance(self);
          },
          [=](caf::error& err) { fail(self, "loss actor did not answer: " + self->system().render(err), id); });
}

/// Lockstep: runs tick `st.tick` if its inputs are there. Returns false when it must wait.
bool run_lockstep_tick(self_ptr self) {
  auto& st = self->state;
  const int64_t t = st.tick;
  const int64_t in_fwd = st.faults_on() ? st.faults.in_forward_delay : 0;
  const int64_t in_bwd = st.faults_on() ? st.faults.in_backward_delay : 0;
  const bool need_forward = st.is_first() || t >= 1 + in_fwd;
  const bool need_backward = !st.is_last() && t >= 1 + in_bwd;
  auto f = st.lockstep_forward.find(t);
  auto b = st.lockstep_backward.find(t);
  if ((need_forward && f == st.lockstep_forward.end()) || (need_backward && b == st.lockstep_backward.end()))
    return false;
  maybe_crash(st);
  forward_data fin = f != st.lockstep_forward.end() ? std::move(f->second) : forward_data{};
  backward_data bin = b != st.lockstep_backward.end() ? std::move(b->second) : backward_data{};
  if (f != st.lockstep_forward.end()) st.lockstep_forward.erase(f);
  if (b != st.lockstep_backward.end()) st.lockstep_backward.erase(b);

  auto end_tick = [self, t, bin](stage_actor_state& s) {
    // The backward half (for the last stage it already ran with the loss), then the tick is over.
    if (!s.is_last()) {
      if (bin.grad.defined()) {
        stage::backward_result r = run_backward(s, bin.s.micro_batch, bin.rebuilt, bin.grad);
        send_backward(self, bin.s.micro_batch, t, std::move(r.input), std::move(r.input_grad));
      } else {
        send_backward(self, -1, t, {}, {});
      }
    }
    if (s.is_first()) self->send(caf::actor_cast<loader_actor>(s.loader), credit_atom_v, int64_t{1});
    ++s.tick;
  };

  if (fin.x.defined()) {
    const int64_t id = fin.s.micro_batch;
    activation out = run_forward(st, fin);
    if (st.is_last()) {
      request_loss(self, id, out, [self, id, t, end_tick](stage::backward_result r) {
        auto& s = self->state;
        send_backward(self, id, t, std::move(r.input), std::move(r.input_grad));
        end_tick(s);
      });
      return false;  // continues when the loss answers
    }
    send_forward(self, id, t, std::move(out));
  } else {
    if (!st.is_last()) send_forward(self, -1, t, {});
    if (st.is_last()) send_backward(self, -1, t, {}, {});
  }
  end_tick(st);
  return true;
}

/// Async: one unit of work, backward first (in this stage's FIFO order). False when idle.
bool run_async_step(self_ptr self) {
  auto& st = self->state;
  auto b = st.async_backward.find(st.ctx.compute->next_backward_id());
  if (b != st.async_backward.end()) {
    backward_data in = std::move(b->second);
    st.async_backward.erase(b);
    stage::backward_result r = run_backward(st, in.s.micro_batch, in.rebuilt, in.grad);
    send_backward(self, in.s.micro_batch, -1, std::move(r.input), std::move(r.input_grad));
    return true;
  }
  if (st.async_forward.empty()) return false;
  forward_data in = std::move(st.async_forward.front());
  st.async_forward.pop_front();
  maybe_crash(st);
  const int64_t id = in.s.micro_batch;
  activation out = run_forward(st, in);
  ++st.tick;  // async "ticks" count this stage's forwards: the delay is the forwards in between
  if (st.is_last()) {
    request_loss(self, id, out, [self, id](stage::backward_result r) {
      send_backward(self, id, -1, std::move(r.input), std::move(r.input_grad));
    });
    return false;
  }
  send_forward(self, id, -1, std::move(out));
  return true;
}

void advance(self_ptr self) {
  auto& st = self->state;
  if (!st.in_phase || st.awaiting_loss) return;
  try {
    if (st.lockstep()) {
      while (st.tick < st.plan.ticks && run_lockstep_tick(self)) {
      }
      if (!st.awaiting_loss && st.tick >= st.plan.ticks) finish_phase(self);
    } else {
      while (run_async_step(self)) {
      }
      if (!st.awaiting_loss && st.is_first() && st.completed >= st.plan.micro_batches) finish_phase(self);
    }
  } catch (const std::exception& e) {
    fail(self, e.what(), -1);
  }
}

stage_report make_report(stage_actor_state& st) {
  stage_report r = st.events;
  const stage_stats& s = st.ctx.compute->stats();
  r.stage = st.ctx.index;
  r.forwards = s.forwards;
  r.backwards = s.backwards;
  r.weight_version = st.ctx.compute->weight_version();
  for (auto& kv : st.delays) r.delay_ticks.push_back({kv.first, kv.second});
  for (auto& kv : st.staleness) r.staleness_steps.push_back({kv.first, kv.second});
  r.fifo_peak = static_cast<int64_t>(s.fifo_peak);
  r.fifo_peak_bytes = static_cast<int64_t>(s.fifo_peak_bytes);
  r.stash_peak = static_cast<int64_t>(s.stash_peak);
  r.stash_peak_bytes = static_cast<int64_t>(s.stash_peak_bytes);
  r.mailbox_peak = st.mailbox_peak;
  r.busy_seconds = st.busy_seconds;
  r.wall_seconds = std::chrono::duration<double>(clock_type::now() - st.phase_start).count();
  r.inversion_samples = s.inversion_samples;
  r.inversion_error_sum = s.inversion_error_sum;
  r.inversion_error_max = s.inversion_error_max;
  return r;
}

void accept_forward(self_ptr self, forward_data in) {
        auto& st = self->state;
        if (early(st, in.s)) {
          st.early_forward.push_back(std::move(in));
          return;
        }
        if (stale(st, in.s)) {
          ++st.events.duplicates_discarded;
          return;
        }
        if (st.lockstep()) {
          // A second copy of a tick's message: that tick is waiting for it, or has already run.
          if (in.s.tick < st.tick || !st.lockstep_forward.emplace(in.s.tick, std::move(in)).second)
            ++st.events.duplicates_discarded;
        } else if (in.s.micro_batch >= 0 && !st.seen_forward.insert(in.s.micro_batch).second) {
          ++st.events.duplicates_discarded;
          return;
        } else {
          st.async_forward.push_back(std::move(in));
        }
        note_mailbox(st);
        advance(self);
}

void accept_backward(self_ptr self, backward_data in) {
        auto& st = self->state;
        if (early(st, in.s)) {
          st.early_backward.push_back(std::move(in));
          return;
        }
        if (stale(st, in.s)) {
          ++st.events.duplicates_discarded;
          return;
        }
        if (st.lockstep()) {
          if (in.s.tick < st.tick || !st.lockstep_backward.emplace(in.s.tick, std::move(in)).second)
            ++st.events.duplicates_discarded;
          note_mailbox(st);
          advance(self);
          return;
        }
        if (!st.seen_backward.insert(in.s.micro_batch).second) {
          ++st.events.duplicates_discarded;
          return;
        }
        st.async_backward.emplace(in.s.micro_batch, std::move(in));
        note_mailbox(st);
        self->send(self, process_atom_v);  // let forwards that already arrived wait behind it
}

stage_actor::behavior_type stage_behavior(self_ptr self, stage_context ctx) {
  self->state.ctx = std::move(ctx);
  return {
      [=](forward_data& in) { accept_forward(self, std::move(in)); },
      [=](backward_data& in) { accept_backward(self, std::move(in)); },
      [=](process_atom) { advance(self); },
      [=](flush_atom, int64_t) { advance(self); },
      [=](faults_atom, stage_faults f) {
        self->state.faults = f;
        self->state.fault_rng.seed(f.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(self->state.ctx.index));
        return faults_atom_v;
      },
      [=](wire_atom, caf::actor prev, caf::actor next, caf::actor loss, caf::actor loader, caf::actor coordinator,
          int32_t count) {
        auto& st = self->state;
        st.prev = std::move(prev), st.next = std::move(next), st.loss = std::move(loss);
        st.loader = std::move(loader), st.coordinator = std::move(coordinator);
        st.count = count;
        return wire_atom_v;
      },
      [=](plan_atom, phase_plan plan) {
        auto& st = self->state;
        st.plan = plan;
        st.tick = 0;
        st.completed = 0;
        st.in_phase = true;
        st.delays.clear(), st.staleness.clear(), st.forward_tick.clear();
        st.seen_forward.clear(), st.seen_backward.clear();
        st.mailbox_peak = 0;
        st.busy_seconds = 0;
        st.events = stage_report{};
        st.phase_start = clock_type::now();
        auto forwards = std::move(st.early_forward);
        auto backwards = std::move(st.early_backward);
        st.early_forward.clear(), st.early_backward.clear();
        for (auto& f : forwards) accept_forward(self, std::move(f));
        for (auto& b : backwards) accept_backward(self, std::move(b));
        advance(self);
        return plan_atom_v;
      },
      [=](eval_data& in) -> caf::result<eval_data> {
        auto& st = self->state;
        try {
          activation out = st.ctx.compute->evaluate(on_device(st, in.x));
          return eval_data{in.batch, activation{to_host(st, out.x1), to_host(st, out.x2)}};
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "stage " + std::to_string(st.ctx.index + 1) + ": " + e.what());
        }
      },
      [=](report_atom) { return make_report(self->state); },
      [=](state_atom) {
        auto& st = self->state;
        stage_state out;
        out.stage = st.ctx.index;
        out.optimizer_steps = st.ctx.compute->optimizer().steps_taken();
        for (auto& kv : export_stage_state(*st.ctx.compute, *st.ctx.device)) out.tensors.push_back({kv.first, kv.second});
        return out;
      },
      [=](restore_atom, stage_state& in) -> caf::result<restore_atom> {
        auto& st = self->state;
        try {
          std::map<std::string, tensor> by_name;
          for (auto& t : in.tensors) by_name[t.name] = t.value;
          import_stage_state(*st.ctx.compute, *st.ctx.device, [&](const std::string& name) -> const tensor& {
            auto it = by_name.find(name);
            if (it == by_name.end()) throw std::runtime_error("tensor '" + name + "' is missing");
            return it->second;
          });
          st.ctx.compute->optimizer().set_steps_taken(in.optimizer_steps);
          return restore_atom_v;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "stage " + std::to_string(st.ctx.index + 1) + ": " + e.what());
        }
      },
  };
}

}  // namespace

messages::stage_actor spawn_stage_actor(caf::actor_system& sys, stage_context context) {
  // A GPU stage blocks on its device and needs one OS thread for its whole life: detached.
  if (context.device->where().type == device_type::cuda)
    return sys.spawn<caf::detached>(stage_behavior, std::move(context));
  return sys.spawn(stage_behavior, std::move(context));
}

}  // namespace petra

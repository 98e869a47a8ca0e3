// The stage actor. Handlers are short: they queue what arrived and let `advance` run the
// compute stage as far as the inputs allow. No exception crosses the actor boundary: a failure
// becomes a failure_report to the coordinator, and the actor quits.
#include "actors/stage_actor.hpp"

#include <caf/all.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>

#include "compute/pipeline/stage_state.hpp"

namespace petra {
namespace {

using namespace messages;
using namespace atoms;
using clock_type = std::chrono::steady_clock;

struct stage_actor_state {
  stage_context ctx;
  int32_t count = 1;  // J
  caf::actor prev, next, loss, loader, coordinator;

  bool in_phase = false;
  phase_plan plan;
  int64_t tick = 0;                 // lockstep: the next tick to run
  int64_t completed = 0;            // async, first stage: micro-batches finished
  bool awaiting_loss = false;       // last stage: a loss request is out
  std::map<int64_t, forward_data> lockstep_forward;   // by tick
  std::map<int64_t, backward_data> lockstep_backward;
  std::deque<forward_data> async_forward;
  std::deque<backward_data> async_backward;

  // Measurements of the phase.
  std::map<int64_t, int64_t> forward_tick;      // micro-batch → tick of its forward
  std::map<int64_t, int64_t> delays, staleness;
  int64_t mailbox_peak = 0;
  double busy_seconds = 0;
  clock_type::time_point phase_start;

  bool is_first() const { return ctx.index == 0; }
  bool is_last() const { return ctx.index == count - 1; }
};

using self_ptr = stage_actor::stateful_pointer<stage_actor_state>;

activation on_device(stage_actor_state& st, const activation& x) {
  auto up = [&](const tensor& t) { return !t.defined() || t.where() == st.ctx.device->where() ? t : st.ctx.device->from_host(t); };
  return {up(x.x1), up(x.x2)};
}

void note_mailbox(stage_actor_state& st) {
  const int64_t waiting = static_cast<int64_t>(st.lockstep_forward.size() + st.lockstep_backward.size() +
                                               st.async_forward.size() + st.async_backward.size());
  st.mailbox_peak = std::max(st.mailbox_peak, waiting);
}

void fail(self_ptr self, const std::string& what, int64_t micro_batch) {
  auto& st = self->state;
  caf::anon_send(st.coordinator, failure_report{st.ctx.index, st.tick, micro_batch, what});
  self->quit(caf::make_error(caf::sec::runtime_error, what));
}

/// The forward of one micro-batch; returns the output.
activation run_forward(stage_actor_state& st, const forward_data& in) {
  const auto t0 = clock_type::now();
  st.forward_tick[in.s.micro_batch] = st.tick;
  activation out = st.ctx.compute->forward(on_device(st, in.x), in.s.micro_batch);
  st.busy_seconds += std::chrono::duration<double>(clock_type::now() - t0).count();
  return out;
}

/// The backward of one micro-batch; returns (rebuilt input, its gradient).
stage::backward_result run_backward(stage_actor_state& st, int64_t id, const activation& rebuilt,
                                    const activation& grad) {
  const auto t0 = clock_type::now();
  const int64_t version = st.ctx.compute->weight_version();
  stage::backward_result r = st.ctx.compute->backward(on_device(st, rebuilt), on_device(st, grad), id);
  st.busy_seconds += std::chrono::duration<double>(clock_type::now() - t0).count();
  auto it = st.forward_tick.find(id);
  if (it != st.forward_tick.end()) {
    ++st.delays[st.tick - it->second];
    st.forward_tick.erase(it);
  }
  ++st.staleness[version - r.forward_version];
  return r;
}

stamp stamp_for(stage_actor_state& st, int64_t id, int64_t tick) {
  return stamp{id, tick, st.ctx.compute->weight_version(), st.ctx.index};
}

/// Sends the backward result of micro-batch `id` upstream (or finishes it at the first stage).
void send_backward(self_ptr self, int64_t id, int64_t tick, stage::backward_result r) {
  auto& st = self->state;
  if (!st.is_first()) {
    self->send(caf::actor_cast<stage_actor>(st.prev),
               backward_data{stamp_for(st, id, tick), std::move(r.input), std::move(r.input_grad)});
  } else if (st.ctx.mode == runtime_mode::async) {
    ++st.completed;
    self->send(caf::actor_cast<loader_actor>(st.loader), credit_atom_v, int64_t{1});
  }
}

void finish_phase(self_ptr self) {
  auto& st = self->state;
  st.in_phase = false;
  caf::anon_send(st.coordinator, done_atom_v, st.ctx.index);
}

void advance(self_ptr self);

/// Last stage: forward done, the loss actor's answer arrives here; the backward follows at once.
void request_loss(self_ptr self, int64_t id, activation logits, std::function<void(stage::backward_result)> then) {
  auto& st = self->state;
  st.awaiting_loss = true;
  const tensor host_logits = st.ctx.device->where().type == device_type::cpu ? logits.x1 : st.ctx.device->to_host(logits.x1);
  self->request(caf::actor_cast<loss_actor>(st.loss), std::chrono::seconds(120), logits_data{stamp_for(st, id, st.tick), host_logits})
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

/// Lockstep: run tick `st.tick` if its inputs are there. Returns false when it must wait.
bool run_lockstep_tick(self_ptr self) {
  auto& st = self->state;
  const int64_t t = st.tick;
  const bool need_forward = st.is_first() || t > 0;
  const bool need_backward = !st.is_last() && t > 0;
  auto f = st.lockstep_forward.find(t);
  auto b = st.lockstep_backward.find(t);
  if ((need_forward && f == st.lockstep_forward.end()) || (need_backward && b == st.lockstep_backward.end()))
    return false;
  forward_data fin = f != st.lockstep_forward.end() ? std::move(f->second) : forward_data{};
  backward_data bin = b != st.lockstep_backward.end() ? std::move(b->second) : backward_data{};
  if (f != st.lockstep_forward.end()) st.lockstep_forward.erase(f);
  if (b != st.lockstep_backward.end()) st.lockstep_backward.erase(b);
  const bool last_tick_message = t + 1 >= st.plan.ticks;  // nothing is sent past the phase

  auto end_tick = [self, t, bin, last_tick_message](stage_actor_state& s) {
    // The backward half (for the last stage it already ran with the loss), then the tick is over.
    if (!s.is_last()) {
      if (bin.grad.defined()) {
        stage::backward_result r = run_backward(s, bin.s.micro_batch, bin.rebuilt, bin.grad);
        if (!s.is_first() || !last_tick_message) send_backward(self, bin.s.micro_batch, t + 1, std::move(r));
      } else if (!s.is_first() && !last_tick_message) {
        self->send(caf::actor_cast<stage_actor>(s.prev), backward_data{stamp{-1, t + 1, s.ctx.compute->weight_version(), s.ctx.index}, {}, {}});
      }
    }
    if (s.is_first()) self->send(caf::actor_cast<loader_actor>(s.loader), credit_atom_v, int64_t{1});
    ++s.tick;
  };

  if (fin.x.defined()) {
    const int64_t id = fin.s.micro_batch;
    activation out = run_forward(st, fin);
    if (st.is_last()) {
      request_loss(self, id, out, [self, id, t, last_tick_message, end_tick](stage::backward_result r) {
        auto& s = self->state;
        if (!s.is_first() && !last_tick_message) send_backward(self, id, t + 1, std::move(r));
        end_tick(s);
      });
      return false;  // continues when the loss answers
    }
    if (!last_tick_message)
      self->send(caf::actor_cast<stage_actor>(st.next), forward_data{stamp_for(st, id, t + 1), std::move(out)});
  } else {
    if (!st.is_last() && !last_tick_message)
      self->send(caf::actor_cast<stage_actor>(st.next), forward_data{stamp{-1, t + 1, st.ctx.compute->weight_version(), st.ctx.index}, {}});
    if (st.is_last() && !st.is_first() && !last_tick_message)
      self->send(caf::actor_cast<stage_actor>(st.prev), backward_data{stamp{-1, t + 1, st.ctx.compute->weight_version(), st.ctx.index}, {}, {}});
  }
  end_tick(st);
  return true;
}

/// Async: one unit of work, backward first. Returns false when there is nothing to do.
bool run_async_step(self_ptr self) {
  auto& st = self->state;
  if (!st.async_backward.empty()) {
    backward_data in = std::move(st.async_backward.front());
    st.async_backward.pop_front();
    send_backward(self, in.s.micro_batch, -1, run_backward(st, in.s.micro_batch, in.rebuilt, in.grad));
    return true;
  }
  if (st.async_forward.empty()) return false;
  forward_data in = std::move(st.async_forward.front());
  st.async_forward.pop_front();
  const int64_t id = in.s.micro_batch;
  activation out = run_forward(st, in);
  ++st.tick;  // async "ticks" count this stage's forwards: the delay is the forwards in between
  if (st.is_last()) {
    request_loss(self, id, out, [self, id](stage::backward_result r) { send_backward(self, id, -1, std::move(r)); });
    return false;
  }
  self->send(caf::actor_cast<stage_actor>(st.next), forward_data{stamp_for(st, id, -1), std::move(out)});
  return true;
}

void advance(self_ptr self) {
  auto& st = self->state;
  if (!st.in_phase || st.awaiting_loss) return;
  try {
    if (st.ctx.mode == runtime_mode::lockstep) {
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
  stage_report r;
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

stage_actor::behavior_type stage_behavior(self_ptr self, stage_context ctx) {
  self->state.ctx = std::move(ctx);
  return {
      [=](forward_data& in) {
        auto& st = self->state;
        if (st.ctx.mode == runtime_mode::lockstep)
          st.lockstep_forward.emplace(in.s.tick, std::move(in));
        else
          st.async_forward.push_back(std::move(in));
        note_mailbox(st);
        advance(self);
      },
      [=](backward_data& in) {
        auto& st = self->state;
        if (st.ctx.mode == runtime_mode::lockstep)
          st.lockstep_backward.emplace(in.s.tick, std::move(in));
        else
          st.async_backward.push_back(std::move(in));
        note_mailbox(st);
        if (st.ctx.mode == runtime_mode::async)
          self->send(self, process_atom_v);  // let forwards that already arrived wait behind it
        else
          advance(self);
      },
      [=](process_atom) { advance(self); },
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
        st.mailbox_peak = 0;
        st.busy_seconds = 0;
        st.phase_start = clock_type::now();
        advance(self);
        return plan_atom_v;
      },
      [=](eval_data& in) -> caf::result<eval_data> {
        auto& st = self->state;
        try {
          activation out = st.ctx.compute->evaluate(on_device(st, in.x));
          auto down = [&](const tensor& t) { return !t.defined() || t.where().type == device_type::cpu ? t : st.ctx.device->to_host(t); };
          return eval_data{in.batch, activation{down(out.x1), down(out.x2)}};
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

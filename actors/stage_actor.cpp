// The stage actor: the handlers both protocols share, over the protocol's own state. Handlers are
// short; no exception crosses the actor boundary (a failure becomes a failure_report to the
// coordinator and the actor quits with petra's error code).
#include "actors/stage_actor.hpp"

#include "actors/fg_lockstep.hpp"
#include "actors/stage_async.hpp"
#include "actors/stage_lockstep.hpp"
#include "compute/cpu/pinning.hpp"
#include "compute/pipeline/stage_state.hpp"
#include "training/runtime_support.hpp"
#include "training/snapshot.hpp"
#include "training/stage_threads.hpp"
#include "training/tick_schedule.hpp"

namespace petra {
namespace {

using namespace detail;

// A stage's side of a live migration: at a drained point it checks that it holds nothing of a phase
// (queued messages, a pending cut, an output awaiting the loss, guesses awaiting derivatives) and
// gives its whole state as a cut's part; the new actor takes it.

/// Throws naming what a stage that should be drained still holds (`what` empty: nothing).
void require_drained(const stage_core& c, const std::string& what) {
  std::string held = what;
  auto add = [&](bool holds, const std::string& thing) {
    if (holds) held += (held.empty() ? "" : ", ") + thing;
  };
  add(c.phase.running, "a running phase");
  add(c.loss.awaiting, "an output awaiting the loss");
  add(!c.inbox.empty(), "messages of a phase not planned yet");
  add(c.ctx.fg && c.ctx.fg->held() > 0, "forward-gradient guesses awaiting their derivatives");
  if (held.empty()) return;
  throw std::logic_error("asked for its state while it holds " + held +
                         ": a stage moves only where the pipeline is drained");
}

/// The part itself: the stage's cut with its auxiliary head, if it has one.
cut_part part_of(const stage_core& c, stage_cut cut) {
  if (c.ctx.fg) c.ctx.fg->save(cut.state);  // aux/param, aux/momentum, aux/buffer
  encoded_stage_cut e = encode_stage_cut(cut);
  return cut_part{c.ctx.index, 0, c.phase.plan.phase, std::move(e.tensors), std::move(e.meta)};
}

cut_part migration_part(lockstep_state& st) {
  stage_core& c = st.core;
  const bool queued = !st.forwards.empty() || !st.backwards.empty() || !st.derivatives.empty();
  require_drained(c, queued ? "queued messages" : "");
  return part_of(c, cut_stage(*c.ctx.compute, *c.ctx.device));
}

cut_part migration_part(async_state& st) {
  stage_core& c = st.core;
  std::string what;
  if (!st.forwards.empty() || !st.backwards.empty() || !st.derivatives.empty()) what = "queued messages";
  if (!st.cuts.empty()) what += std::string(what.empty() ? "" : ", ") + "a snapshot's pending part";
  require_drained(c, what);
  stage_cut cut = cut_stage(*c.ctx.compute, *c.ctx.device);
  cut.async.present = true;  // nothing queued, nothing recorded: a new phase starts from none
  return part_of(c, std::move(cut));
}

/// A request's answer from `work`; what it throws becomes the asker's error (bad_request, naming
/// the stage), never an exception across the actor boundary.
template <class Work>
auto answer(const stage_core& c, Work&& work) -> caf::result<decltype(work())> {
  try {
    return work();
  } catch (const std::exception& e) {
    return caf::make_error(petra_errc::bad_request,
                           "stage " + std::to_string(c.ctx.index + 1) + ": " + e.what());
  }
}

template <class State>
stage_actor::behavior_type stage_behavior(typename stage_actor::stateful_pointer<State> self,
                                          stage_context ctx) {
  self->state.core.ctx = std::move(ctx);
  self->state.core.work = training::stage_work(self->state.core.ctx.device, self->state.core.ctx.compute);
  return {
      [=](forward_data& in) { on_forward(self, std::move(in)); },
      [=](backward_data& in) { on_backward(self, std::move(in)); },
      [=](loss_data& in) { on_loss(self, std::move(in)); },
      [=](derivatives_data& in) { on_derivatives(self, std::move(in)); },
      [=](process_atom) { advance(self); },
      [=](stage_links& links) {
        stage_core& c = self->state.core;
        return answer(c, [&] {
          // Wired first, on the thread that will compute: the team it starts is pinned with it.
          std::string why;
          if (!cpu::pin_compute_team(c.ctx.cores, &why))
            throw std::runtime_error("runtime.pin_threads: " + why);
          c.ctx.cores.clear();
          c.out.links = std::move(links);
          return wire_atom_v;
        });
      },
      [=](faults_atom, const stage_faults& f) {
        arm_faults(self->state.core, f);
        return faults_atom_v;
      },
      [=](plan_atom, const phase_plan& plan) {
        on_plan(self, plan);
        return plan_atom_v;
      },
      [=](eval_data& in) {
        stage_core& c = self->state.core;
        return answer(c, [&] {
          const activation x = c.work.take_in(in.x);
          const activation y = in.calibrate ? c.ctx.compute->calibrate(x) : c.ctx.compute->evaluate(x);
          return eval_data{in.batch, c.work.hand_out(y, device{}, -1), in.calibrate};
        });
      },
      [=](report_atom) { return make_report(self->state.core); },
      [=](status_atom) { return status_of(self->state); },
      [=](state_atom) {
        stage_core& c = self->state.core;
        return answer(c, [&] {
          stage_snapshot out = snapshot_stage(*c.ctx.compute, *c.ctx.device);
          if (c.ctx.fg) c.ctx.fg->save(out);  // its auxiliary head goes with it
          return out;
        });
      },
      [=](restore_atom, const cut_part& part) {
        return answer(self->state.core, [&] {
          resume_from(self, part);
          return restore_atom_v;
        });
      },
      [=](migrate_atom) { return answer(self->state.core, [&] { return migration_part(self->state); }); },
      [=](hold_atom) { return answer(self->state.core, [&] { return on_hold(self); }); },
      [=](recover_atom, const recovery_order& order) {
        return answer(self->state.core, [&] {
          on_recover(self, order);
          return recover_atom_v;
        });
      },
      [=](restore_atom, const stage_report& earlier) {
        stage_core& c = self->state.core;
        return answer(c, [&] {
          if (c.phase.running) throw std::logic_error("a record to go on from came during a phase");
          c.work.continue_record(earlier);
          return restore_atom_v;
        });
      },
      [=](restore_atom, const stage_snapshot& from) {
        stage_core& c = self->state.core;
        return answer(c, [&] {
          restore_stage(*c.ctx.compute, *c.ctx.device, from);
          if (c.ctx.fg) c.ctx.fg->restore(from);
          return restore_atom_v;
        });
      },
  };
}

template <class State>
messages::stage_actor spawn_as(caf::actor_system& sys, stage_context context) {
  // Every stage computes at the same time as the others: on CAF's scheduler, at most its
  // threads' count of stages could. A device stage also blocks on its device, and a GPU needs one OS
  // thread for its whole life. Where the CPU stages outnumber the cores, they take turns there.
  if (!context.own_thread) return sys.spawn(stage_behavior<State>, std::move(context));
  return sys.spawn<caf::detached>(stage_behavior<State>, std::move(context));
}

}  // namespace

stage_context make_stage_context(const config::run_config& c, const placed_stage& placed, int32_t j,
                                 int32_t count, std::shared_ptr<training::trace_recorder> trace,
                                 std::string process) {
  stage_context out{placed.device,
                    placed.compute,
                    j,
                    c.runtime.mode,
                    std::move(trace),
                    std::move(process),
                    c.output.metrics_every_steps,
                    async_stage_window(c, j, count),
                    backward_first(c)};
  out.cores = stage_cores(c, static_cast<std::size_t>(j), usable_cores());
  // More CPU threads than cores: the CPU stages take turns on the scheduler (training/stage_threads).
  out.own_thread = !cpu_stage(c, static_cast<std::size_t>(j)) || !stages_take_turns(c, usable_cores());
  if (c.training.method == config::training_method::forward_gradient)
    out.fg = std::make_shared<forward_gradient_stage>(
        *placed.compute, static_cast<std::size_t>(count), method_for(c.training).forward_gradient,
        c.model.num_classes, placed.compute->optimizer().settings(), c.training.seed, placed.input);
  if (out.fg && c.runtime.mode == config::runtime_mode::lockstep)
    out.fg_link_delay =
        forward_gradient_link_delay(c, static_cast<std::size_t>(j), static_cast<std::size_t>(count));
  return out;
}

messages::stage_actor spawn_stage_actor(caf::actor_system& sys, stage_context context) {
  if (context.mode == config::runtime_mode::lockstep)
    return spawn_as<lockstep_state>(sys, std::move(context));
  if (context.mode == config::runtime_mode::async) return spawn_as<async_state>(sys, std::move(context));
  throw std::invalid_argument("a stage actor runs lockstep or async, not " + config::to_string(context.mode));
}

}  // namespace petra

// The data-loader actor.
#include "actors/loader_actor.hpp"

#include <caf/all.hpp>

namespace petra {
namespace {

using namespace messages;
using namespace atoms;

struct loader_actor_state {
  std::shared_ptr<data_feed> feed;
  std::shared_ptr<training::trace_recorder> trace;
  training::trace_track track;
  bool lockstep = true;
  forward_sink first_stage;
  loss_actor loss;
  int64_t window = 1;
  phase_plan plan;
  int64_t credits = 0;
  int64_t sent = 0;  // messages sent this phase (lockstep: one per tick, markers included)
  int64_t fed = 0;   // micro-batches sent this phase
  static inline const char* name = "petra.loader";
};

using self_ptr = loader_actor::stateful_pointer<loader_actor_state>;

void feed_while_credit(self_ptr self) {
  auto& st = self->state;
  const int64_t total = st.lockstep ? st.plan.ticks : st.plan.micro_batches;
  while (st.credits > 0 && st.sent < total) {
    forward_data out;
    out.s.tick = st.lockstep ? st.sent : -1;
    out.s.phase = st.plan.phase;
    micro_batch mb;
    const bool entry_tick = !st.lockstep || st.sent % std::max<int64_t>(1, st.plan.spacing) == 0;
    const auto begin = training::trace_clock::now();
    if (entry_tick && st.fed < st.plan.micro_batches && st.feed->next(mb)) {
      out.s.micro_batch = mb.id;
      out.x = std::move(mb.images);
      self->send(st.loss, labels_data{mb.id, std::move(mb.labels)});
      ++st.fed;
      if (st.trace && st.trace->records(mb.id)) {
        const auto end = training::trace_clock::now();
        st.trace->span(st.track, "load", begin, end, mb.id, {{"micro_batch", mb.id}});
        st.trace->flow_out(st.track, training::trace_flow_id(training::flow_kind::forward, 511, mb.id, mb.id),
                           begin + (end - begin) / 2, mb.id);
        st.trace->counter(st.track, "credits", end, mb.id, static_cast<double>(st.credits - 1));
      }
    }
    self->send(st.first_stage, std::move(out));
    --st.credits;
    ++st.sent;
  }
}

loader_actor::behavior_type loader_behavior(self_ptr self, std::shared_ptr<data_feed> feed, bool lockstep,
                                            std::shared_ptr<training::trace_recorder> trace) {
  self->state.feed = std::move(feed);
  if (trace) self->state.track = trace->track("coordinator", "loader");
  self->state.trace = std::move(trace);
  self->state.lockstep = lockstep;
  return {
      [=](wire_atom, forward_sink& first_stage, loss_actor& loss, int32_t window) {
        auto& st = self->state;
        st.first_stage = std::move(first_stage);
        st.loss = std::move(loss);
        st.window = std::max<int64_t>(1, window);
        return wire_atom_v;
      },
      [=](plan_atom, const phase_plan& plan) {
        auto& st = self->state;
        st.plan = plan;
        st.feed->start_epoch(plan.epoch, plan.first_micro_batch);
        st.credits = st.window;
        st.sent = 0;
        st.fed = 0;
        feed_while_credit(self);
        return plan_atom_v;
      },
      [=](credit_atom, int64_t n) {
        self->state.credits += n;
        feed_while_credit(self);
      },
  };
}

}  // namespace

messages::loader_actor spawn_loader_actor(caf::actor_system& sys, std::shared_ptr<data_feed> feed,
                                          config::runtime_mode mode,
                                          std::shared_ptr<training::trace_recorder> trace) {
  return sys.spawn(loader_behavior, std::move(feed), mode == config::runtime_mode::lockstep,
                   std::move(trace));
}

}  // namespace petra

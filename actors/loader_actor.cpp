// The data-loader actor: it hands out micro-batches the feed's worker threads made ahead (it only
// waits when the next one is not ready yet), and keeps the credits.
#include "actors/loader_actor.hpp"

#include <caf/all.hpp>

#include "messages/errors.hpp"

namespace petra {
namespace {

using namespace messages;
using namespace atoms;

struct loader_actor_state {
  std::shared_ptr<data_feed> feed;
  uint64_t ticket = 0;  // of this phase's start_epoch: a torn-down loader's late calls serve nothing
  bool failed = false;  // the feed threw: the actor is ending
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

/// The next micro-batch of the phase, if any; a data error (a bad image under on_bad_image: fail)
/// ends the actor with petra's bad_data error: replaying the phase would meet it again.
bool next_batch(self_ptr self, micro_batch& mb) {
  auto& st = self->state;
  try {
    return st.feed->next(mb, st.ticket);
  } catch (const std::exception& e) {
    st.failed = true;
    self->quit(caf::make_error(petra_errc::bad_data, std::string(e.what())));
    return false;
  }
}

void feed_while_credit(self_ptr self) {
  auto& st = self->state;
  const int64_t total = st.lockstep ? st.plan.ticks : st.plan.micro_batches;
  while (!st.failed && st.credits > 0 && st.sent < total) {
    forward_data out;
    out.s.tick = st.lockstep ? st.sent : -1;
    out.s.phase = st.plan.phase;
    micro_batch mb;
    const bool entry_tick = !st.lockstep || st.sent % std::max<int64_t>(1, st.plan.spacing) == 0;
    if (entry_tick && st.fed < st.plan.micro_batches && next_batch(self, mb)) {
      out.s.micro_batch = mb.id;
      out.x = std::move(mb.images);
      self->send(st.loss, labels_data{mb.id, std::move(mb.labels)});
      ++st.fed;
    }
    if (st.failed) return;
    self->send(st.first_stage, std::move(out));
    --st.credits;
    ++st.sent;
  }
}

loader_actor::behavior_type loader_behavior(self_ptr self, std::shared_ptr<data_feed> feed, bool lockstep) {
  self->state.feed = std::move(feed);
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
        st.ticket = st.feed->start_epoch(plan.epoch, plan.first_micro_batch);
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
                                          config::runtime_mode mode) {
  return sys.spawn(loader_behavior, std::move(feed), mode == config::runtime_mode::lockstep);
}

}  // namespace petra

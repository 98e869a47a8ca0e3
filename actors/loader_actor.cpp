// The data-loader actor: it follows the phase's input schedule (training micro-batches, crossing
// epoch ends, and the evaluation waves), one message per credit, and after a stage-local recovery
// sends what was lost again first.
#include "actors/loader_actor.hpp"

#include <algorithm>
#include <caf/all.hpp>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "messages/errors.hpp"
#include "training/input_schedule.hpp"

namespace petra {
namespace {

using namespace messages;
using namespace atoms;

struct loader_actor_state {
  std::shared_ptr<data_feed> feed;
  std::shared_ptr<data_feed> waves;  // the test set in training-sized micro-batches
  std::shared_ptr<training::trace_recorder> trace;
  training::trace_track track;
  bool lockstep = true;
  bool labels_to_stages = false;  // forward_gradient's auxiliary heads: labels beside the images too
  forward_sink first_stage;
  loss_actor loss;
  int64_t window = 1;
  phase_plan plan;
  std::optional<input_schedule> schedule;
  bool more = false;         // the schedule has more to give
  bool failed = false;       // the data failed: the actor is ending
  bool held = false;         // stage-local recovery: nothing is sent until it ends
  int64_t last_marker = -1;  // async: the tick of the last cut marker sent in the phase
  int64_t credits = 0;
  int64_t tick = 0;                           // the schedule's next tick
  std::deque<forward_data> ready;             // async: what a tick gave, waiting for credits
  std::map<int64_t, micro_batch> reissue_at;  // lockstep: re-issued micro-batches by the tick they enter
  std::size_t next_cut = 0;                   // async: the plan's next cut, whose marker the loader sends
  std::map<int64_t, int64_t> early_credits;   // by phase: came before that phase's plan
  // Async, its record of the phase (what survives a lost stage 1): the training micro-batches sent
  // and not completed at stage 1, and how many training and evaluation batches were sent.
  std::set<int64_t> in_flight;
  int64_t sent = 0, evals_sent = 0, last_sent = -1;
  static inline const char* name = "petra.loader";
};

using self_ptr = loader_actor::stateful_pointer<loader_actor_state>;

/// The messages of the schedule's next tick: its training micro-batch (or a marker) with its
/// evaluation batch beside it; the labels go to the loss actor.
forward_data next_tick(self_ptr self) {
  auto& st = self->state;
  forward_data out;
  out.s.tick = st.lockstep ? st.tick : -1;
  out.s.phase = st.plan.phase;
  tick_input in;
  const auto begin = training::trace_clock::now();
  const int64_t tick = st.tick++;
  try {
    if (st.more) st.more = st.schedule->next(tick, in);
  } catch (const std::exception& e) {
    // A bad image under data.on_bad_image: fail. Replaying the phase would meet it again: the
    // run stops (the coordinator tells bad_data apart from failures it recovers from).
    st.more = false;
    st.failed = true;
    self->quit(caf::make_error(petra_errc::bad_data, std::string(e.what())));
  }
  if (auto again = st.reissue_at.find(tick); again != st.reissue_at.end()) {  // after the planned ticks
    in.has_train = true;
    in.train = std::move(again->second);
    st.reissue_at.erase(again);
  }
  if (in.has_train) {
    const int64_t id = in.train.id;
    out.s.micro_batch = id;
    out.x = std::move(in.train.images);
    if (st.labels_to_stages) out.labels = in.train.labels;
    self->send(st.loss, labels_data{id, std::move(in.train.labels)});
    if (st.trace && st.trace->records(id)) {
      const auto end = training::trace_clock::now();
      st.trace->span(st.track, "load", begin, end, id, {{"micro_batch", id}});
      st.trace->flow_out(st.track, training::trace_flow_id(training::flow_kind::forward, 511, id, id),
                         begin + (end - begin) / 2, id);
      st.trace->counter(st.track, "credits", end, id, static_cast<double>(st.credits - 1));
    }
  }
  if (in.has_eval) {
    out.eval_epoch = in.eval.epoch;
    out.eval_index = in.eval.index;
    out.eval_x = std::move(in.eval.images);
    self->send(st.loss, labels_data{in.eval.index, std::move(in.eval.labels), in.eval.epoch});
  }
  return out;
}

/// Stage-local recovery: the micro-batches lost in flight go again with their ids (each stage takes a
/// re-issue in anew), their labels to the loss actor: in async ahead of anything not sent yet, in
/// lockstep one per tick from `order.reissue_tick` on, after the phase's planned ticks.
void reissue(self_ptr self, const recovery_order& order) {
  auto& st = self->state;
  const std::vector<int64_t>& ids = order.reissue;
  if (ids.empty() || !st.schedule) return;
  std::vector<micro_batch> again = st.schedule->reload(ids);
  if (st.lockstep) {
    for (std::size_t k = 0; k < again.size(); ++k)
      st.reissue_at.emplace(order.reissue_tick + static_cast<int64_t>(k), std::move(again[k]));
    st.plan.ticks = std::max(st.plan.ticks, order.ticks);
    return;
  }
  for (auto mb = again.rbegin(); mb != again.rend(); ++mb) {
    forward_data out;
    out.s.micro_batch = mb->id;
    out.s.phase = st.plan.phase;
    out.x = std::move(mb->images);
    if (st.labels_to_stages) out.labels = mb->labels;
    self->send(st.loss, labels_data{mb->id, std::move(mb->labels)});
    st.ready.push_front(std::move(out));
  }
}

/// Lockstep: the loss actor's marker of each cut whose tick the loader has now reached: the labels
/// of every tick before it are sent (training::loss_cut_assembly).
void mark_cuts_to_loss(self_ptr self) {
  auto& st = self->state;
  for (; st.next_cut < st.plan.cut_ticks.size() && st.plan.cut_ticks[st.next_cut] <= st.tick; ++st.next_cut)
    self->send(st.loss, cut_marker{st.plan.cut_ticks[st.next_cut], true});
}

void feed_while_credit(self_ptr self) {
  auto& st = self->state;
  if (st.held) return;
  if (st.lockstep) {  // one message per tick, markers included, as long as the phase's ticks last
    for (; !st.failed && st.credits > 0 && st.tick < st.plan.ticks; --st.credits) {
      forward_data out = next_tick(self);
      if (st.failed) return;
      self->send(st.first_stage, std::move(out));
      mark_cuts_to_loss(self);
    }
    return;
  }
  // Async: a training micro-batch and an evaluation batch are messages of their own, a credit
  // each. A cut's marker follows the last message of the ticks before it at once (no credit).
  for (;;) {
    if (!st.ready.empty()) {
      if (st.credits <= 0) return;
      forward_data& next = st.ready.front();
      if (next.s.micro_batch >= 0 && st.in_flight.insert(next.s.micro_batch).second) {
        ++st.sent;
        st.last_sent = std::max(st.last_sent, next.s.micro_batch);
      }
      if (next.eval_index >= 0) ++st.evals_sent;
      self->send(st.first_stage, std::move(next));
      st.ready.pop_front();
      --st.credits;
      continue;
    }
    if (st.next_cut < st.plan.cut_ticks.size() && st.plan.cut_ticks[st.next_cut] <= st.tick) {
      forward_data marker;
      marker.s.tick = st.last_marker = st.plan.cut_ticks[st.next_cut++];
      marker.s.phase = st.plan.phase;
      self->send(st.first_stage, std::move(marker));
      self->send(st.loss, cut_marker{st.last_marker, true});
      continue;
    }
    if (!st.more || st.credits <= 0) return;
    forward_data both = next_tick(self);
    if (st.failed) return;
    if (both.eval_index >= 0) {
      forward_data eval;
      eval.s = both.s;
      eval.s.micro_batch = -1;
      eval.eval_epoch = both.eval_epoch, eval.eval_index = both.eval_index,
      eval.eval_x = std::move(both.eval_x);
      both.eval_index = -1;
      if (both.s.micro_batch >= 0) st.ready.push_back(std::move(both));
      st.ready.push_back(std::move(eval));
    } else if (both.s.micro_batch >= 0) {
      st.ready.push_back(std::move(both));
    }
  }
}

loader_actor::behavior_type loader_behavior(self_ptr self, std::shared_ptr<data_feed> feed,
                                            std::shared_ptr<data_feed> waves, bool lockstep,
                                            bool labels_to_stages,
                                            std::shared_ptr<training::trace_recorder> trace) {
  self->state.feed = std::move(feed);
  self->state.waves = std::move(waves);
  if (trace) self->state.track = trace->track("coordinator", "loader");
  self->state.trace = std::move(trace);
  self->state.lockstep = lockstep;
  self->state.labels_to_stages = labels_to_stages;
  return {
      [=](loader_links& links) {
        auto& st = self->state;
        st.first_stage = std::move(links.first_stage);
        st.loss = std::move(links.loss);
        st.window = std::max<int64_t>(1, links.credits);
        return wire_atom_v;
      },
      [=](plan_atom, const phase_plan& plan) {
        auto& st = self->state;
        st.plan = plan;
        st.schedule.emplace(*st.feed, plan.eval_items > 0 ? st.waves.get() : nullptr, plan.spacing);
        st.schedule->start(plan.epoch, plan.first_micro_batch, plan.micro_batches);
        if (plan.start_tick > 0) st.schedule->skip_to(plan.start_tick);  // resuming from a cut
        st.more = true;
        // Resuming from a cut: what was in flight there holds its credits.
        st.credits = std::max<int64_t>(0, st.window - plan.in_flight);
        if (auto early = st.early_credits.find(plan.phase); early != st.early_credits.end())
          st.credits += early->second;
        st.early_credits.erase(st.early_credits.begin(), st.early_credits.upper_bound(plan.phase));
        st.tick = plan.start_tick;
        st.held = false;
        st.last_marker = -1;
        st.ready.clear();
        st.reissue_at.clear();
        st.in_flight.clear();
        st.sent = st.evals_sent = 0;
        st.last_sent = -1;
        st.next_cut = static_cast<std::size_t>(
            std::upper_bound(plan.cut_ticks.begin(), plan.cut_ticks.end(), plan.start_tick) -
            plan.cut_ticks.begin());
        feed_while_credit(self);
        return plan_atom_v;
      },
      [=](const credit_return& credit) {
        auto& st = self->state;
        const int64_t n = credit.count, phase = credit.phase;
        if (phase > st.plan.phase) {  // its phase's plan has not come yet (a resumed stage 1 runs at once)
          st.early_credits[phase] += n;
          return;
        }
        if (phase < st.plan.phase) return;  // a late credit of a phase that ended
        if (credit.micro_batch >= 0) st.in_flight.erase(credit.micro_batch);
        st.credits += n;
        feed_while_credit(self);
      },
      [=](hold_atom) {
        auto& st = self->state;
        st.held = true;
        recovery_order where;
        where.phase = st.plan.phase;
        where.tick = st.lockstep ? st.tick : st.last_marker;
        std::set<int64_t> waiting;  // re-issues not sent again yet: they hold no credit
        for (const forward_data& f : st.ready) waiting.insert(f.s.micro_batch);
        for (int64_t id : st.in_flight)
          if (waiting.count(id) == 0) where.cancel.push_back(id);
        where.drop_upto = st.last_sent;
        where.forwards_done = st.sent;
        where.backwards_done = st.sent - static_cast<int64_t>(st.in_flight.size());
        where.evals_done = st.evals_sent;
        return where;
      },
      [=](recover_atom, const recovery_order& order) -> caf::result<recover_atom> {
        auto& st = self->state;
        try {
          reissue(self, order);
        } catch (const std::exception& e) {
          return caf::make_error(petra_errc::bad_data,
                                 std::string("re-issuing lost micro-batches: ") + e.what());
        }
        st.credits += static_cast<int64_t>(order.cancel.size());  // stage 1 was lost with them
        st.held = false;
        feed_while_credit(self);
        return recover_atom_v;
      },
  };
}

}  // namespace

messages::loader_actor spawn_loader_actor(caf::actor_system& sys, std::shared_ptr<data_feed> feed,
                                          std::shared_ptr<data_feed> waves, config::runtime_mode mode,
                                          bool labels_to_stages,
                                          std::shared_ptr<training::trace_recorder> trace) {
  return sys.spawn(loader_behavior, std::move(feed), std::move(waves), mode == config::runtime_mode::lockstep,
                   labels_to_stages, std::move(trace));
}

}  // namespace petra

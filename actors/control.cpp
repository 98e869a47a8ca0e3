// The trainer thread's side of the coordinator.
#include "actors/control.hpp"

#include <algorithm>

namespace petra {

using namespace messages;

run_totals totals_of(const loss_report& r) {
  run_totals t;
  t.micro_batches = r.micro_batches;
  t.samples = r.samples;
  t.correct = r.correct;
  t.loss_sum = r.loss_sum;
  return t;
}

control_channel::control_channel(caf::actor_system& system, std::chrono::seconds stall)
    : self_(system),
      events_(system),
      coordinator_(spawn_coordinator(system, caf::actor_cast<caf::actor_addr>(self_))),
      stall_(stall) {}

control_channel::~control_channel() { caf::anon_send_exit(coordinator_, caf::exit_reason::user_shutdown); }

heartbeat_verdicts control_channel::verdicts(double timeout_s) const {
  auto to_trainer = [trainer = caf::actor_cast<caf::actor_addr>(self_)](const caf::actor_addr& node,
                                                                        caf::message verdict) {
    if (auto to = caf::actor_cast<caf::actor>(trainer))
      caf::anon_send(to, atoms::event_atom_v, node, std::move(verdict));
  };
  return {[=](const std::string& where, const caf::actor_addr& node, double silent_s) {
            to_trainer(node, caf::make_message(atoms::silent_atom_v, where, silent_s, timeout_s));
          },
          [=](const std::string& where) { to_trainer({}, caf::make_message(atoms::late_atom_v, where)); }};
}

void control_channel::take_in_arrived() {
  for (bool more = true; more;)
    self_->receive(
        take_event(), caf::after(std::chrono::milliseconds(0)) >> [&] { more = false; });
}

void control_channel::begin_attempt(std::size_t stages, progress_fn progress, epoch_collector* epochs) {
  take_in_arrived();
  events_.begin_attempt(stages);
  stages_ = stages;
  epochs_ = epochs;
  progress_ = std::move(progress);
  cuts_.clear();
  cuts_fn_ = {};
}

void control_channel::abandon_cuts(int64_t upto) {
  take_in_arrived();
  events_.abandon_cuts(upto);
  cuts_.erase(cuts_.begin(), cuts_.upper_bound(upto));
}

void control_channel::await_phase_ends(std::size_t count, const std::function<void()>& on_stall) {
  while (events_.phase_ends() < count) pump(stall_, on_stall);
}

std::vector<fault_counts> control_channel::faults_after(const std::vector<stage_report>& reports,
                                                        std::chrono::milliseconds timeout) {
  std::vector<int64_t> sent(reports.size(), 0);
  for (const stage_report& r : reports)
    if (r.stage >= 0 && static_cast<std::size_t>(r.stage) < sent.size()) sent[r.stage] = r.fault_events;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  take_in_arrived();
  for (bool waiting = true; waiting && !events_.fault_events_in(sent);) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) break;
    self_->receive(
        take_event(),
        caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left)) >> [&] { waiting = false; });
  }
  return events_.faults();
}

void control_channel::await_epochs(const epoch_collector& epochs, int first, int last) {
  while (!epochs.done(first, last))
    pump(stall_, [&] {
      throw events_.with_counts(
          run_failure(failure_kind::stall, -1, -1,
                      "an epoch's evaluation or loss totals never came after the phase ended"));
    });
}

void control_channel::drain() {
  bool more = true;
  while (more)
    self_->receive(
        take_event(), drop_the_rest(), caf::after(std::chrono::milliseconds(50)) >> [&] { more = false; });
}

std::vector<caf::actor_addr> control_channel::await_gone(std::vector<caf::actor_addr> actors,
                                                         std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto gone = [](const caf::actor_addr& a) { return caf::actor_cast<caf::strong_actor_ptr>(a) == nullptr; };
  for (;;) {  // what is queued here holds its senders: drop it, then see who is left
    self_->receive(
        take_event(), drop_the_rest(), caf::after(std::chrono::milliseconds(5)) >> [] {});
    actors.erase(std::remove_if(actors.begin(), actors.end(), gone), actors.end());
    if (actors.empty() || std::chrono::steady_clock::now() >= deadline) return actors;
  }
}

void control_channel::act_on(coordinator_notice& notice) {
  if (auto* p = std::get_if<coordinator_notice::progress>(&notice.what)) {
    if (progress_) progress_(p->loss, p->windows);
  } else if (auto* r = std::get_if<stage_epoch_report>(&notice.what)) {
    on_epoch_part(*r);
  } else if (auto* l = std::get_if<epoch_loss_report>(&notice.what)) {
    on_epoch_part(*l);
  } else if (auto* e = std::get_if<eval_report>(&notice.what)) {
    on_epoch_part(*e);
  } else if (auto* c = std::get_if<cut_part>(&notice.what)) {
    on_cut_part(*c);
  } else if (auto* f = std::get_if<coordinator_notice::failure>(&notice.what)) {
    if (f->ends_cuts) finish_cuts(f->stage);
    std::rethrow_exception(f->error);
  }
}

void control_channel::on_epoch_part(const stage_epoch_report& r) {
  if (!epochs_) return;
  to_shadows(static_cast<std::size_t>(r.report.stage),
             [&](epoch_collector& e) { e.add_stage(r.epoch, r.report); });
  epochs_->add_stage(r.epoch, r.report);
}

void control_channel::on_epoch_part(const epoch_loss_report& r) {
  if (!epochs_) return;
  to_shadows(stages_, [&](epoch_collector& e) { e.add_loss(r.epoch, totals_of(r.totals)); });
  epochs_->add_loss(r.epoch, totals_of(r.totals));
}

void control_channel::on_epoch_part(const eval_report& r) {
  if (!epochs_) return;
  to_shadows(stages_, [&](epoch_collector& e) { e.add_wave(r.epoch, r.loss_sum, r.correct, r.samples); });
  epochs_->add_wave(r.epoch, r.loss_sum, r.correct, r.samples);
}

void control_channel::on_cut_part(cut_part& p) {
  // Each producer's part follows every epoch part it sent before the cut and precedes those after:
  // a cut's shadow starts as the epochs when its first part came (nothing after the cut is in them
  // yet) and takes the parts of the producers whose part of it is not in yet.
  if (!cuts_fn_ || !epochs_) return;
  const std::size_t J = stages_;
  const std::size_t producer = p.stage < 0 ? J : static_cast<std::size_t>(p.stage);
  if (producer > J) return;
  auto it = cuts_.find(p.tick);
  if (it == cuts_.end())
    it = cuts_.emplace(p.tick, pending_cut{std::vector<std::optional<cut_part>>(J + 1), 0, epochs_->shadow()})
             .first;
  pending_cut& c = it->second;
  if (c.parts[producer]) return;
  c.parts[producer] = std::move(p);
  if (++c.in <= J) return;
  std::vector<cut_part> parts;
  for (auto& part : c.parts) parts.push_back(std::move(*part));
  const nlohmann::json epochs = {{"open", c.shadow.save()}, {"done", c.shadow.done_epochs()}};
  const int64_t tick = it->first;
  cuts_.erase(it);
  cuts_fn_(tick, parts, epochs);
}

void control_channel::finish_cuts(int32_t lost) {
  // A cut still waiting for parts of live actors when the attempt fails: they were sent before the
  // failure or come at once; a cut that needs the lost producer's part is given up.
  const std::size_t producer = lost < 0 ? stages_ : static_cast<std::size_t>(lost);
  auto completable = [&] {
    for (const auto& [tick, c] : cuts_)
      if (producer >= c.parts.size() || c.parts[producer]) return true;
    return false;
  };
  auto part_of_cut = [](const coordinator_notice& n) {
    return !std::holds_alternative<coordinator_notice::progress>(n.what) &&
           !std::holds_alternative<coordinator_notice::failure>(n.what);
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  bool waiting = true;
  while (waiting && cuts_fn_ && completable()) {
    if (auto notice = events_.take(part_of_cut)) {
      act_on(*notice);
      continue;
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) break;
    self_->receive(
        take_event(),
        caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left)) >> [&] { waiting = false; });
  }
}

void control_channel::on_error(const caf::error& err) {
  const auto sender = caf::actor_cast<caf::actor_addr>(self_->current_sender());
  if (!events_.current(sender)) return;
  throw events_.with_counts(
      run_failure(failure_kind::bad_reply, events_.stage_of(sender), -1, self_->system().render(err)));
}

run_failure control_channel::no_answer_from(const std::vector<caf::actor_addr>& silent,
                                            std::chrono::seconds timeout) {
  const int32_t stage = silent.empty() ? -1 : events_.stage_of(silent.front());
  return events_.with_counts(run_failure(failure_kind::bad_reply, stage, -1,
                                         "no answer within " + std::to_string(timeout.count()) + " s from " +
                                             std::to_string(silent.size()) + " actor(s)"));
}

}  // namespace petra

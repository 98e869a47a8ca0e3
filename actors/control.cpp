// The coordinator's mailbox.
#include "actors/control.hpp"

#include <algorithm>

#include "datasets/dataset.hpp"

namespace petra {

using namespace messages;

namespace {

failure_kind kind_of(uint8_t code) {
  switch (static_cast<petra_errc>(code)) {
    case petra_errc::injected_crash:
      return failure_kind::injected_crash;
    case petra_errc::lost_actor:
      return failure_kind::lost_actor;
    case petra_errc::stall:
      return failure_kind::stall;
    case petra_errc::unreachable:
      return failure_kind::unreachable;
    case petra_errc::bad_request:
      return failure_kind::bad_reply;
    case petra_errc::none:
    case petra_errc::stage_exception:
    case petra_errc::bad_data:
      break;
  }
  return failure_kind::stage_exception;
}

}  // namespace

run_totals totals_of(const loss_report& r) {
  run_totals t;
  t.micro_batches = r.micro_batches;
  t.samples = r.samples;
  t.correct = r.correct;
  t.loss_sum = r.loss_sum;
  return t;
}

control_channel::control_channel(caf::actor_system& system, std::chrono::seconds stall)
    : system_(system), self_(system), stall_(stall) {}

coordinator_actor control_channel::handle() { return caf::actor_cast<coordinator_actor>(self_); }

void control_channel::watch(std::vector<caf::actor_addr> actors, std::vector<int32_t> stage_of,
                            int32_t generation) {
  watched_.clear();
  for (std::size_t i = 0; i < actors.size(); ++i) watched_[actors[i]] = stage_of[i];
  generation_ = generation;
}

void control_channel::watch_extra(const caf::actor_addr& who, int32_t stage) { watched_[who] = stage; }

void control_channel::begin_attempt(std::size_t stages, progress_fn progress, epoch_collector* epochs) {
  faults_.assign(stages, fault_counts{});
  if (epoch_faults_.size() != stages) epoch_faults_.assign(stages, fault_counts{});
  epochs_ = epochs;
  progress_ = std::move(progress);
  windows_.assign(stages, stage_window{});
  windows_seen_ = 0;
  last_loss_ = loss_report{};
  phase_ends_ = 0;
  cuts_.clear();
  cuts_fn_ = {};
  abandoned_upto_ = -1;
}

void control_channel::abandon_cuts(int64_t upto) {
  abandoned_upto_ = std::max(abandoned_upto_, upto);
  cuts_.erase(cuts_.begin(), cuts_.upper_bound(upto));
}

void control_channel::count_kill(int32_t stage) {
  if (stage < 0 || static_cast<std::size_t>(stage) >= faults_.size()) return;
  ++faults_[stage].kills;
  ++epoch_faults_[stage].kills;
}

void control_channel::await_phase_ends(std::size_t count, const std::function<void()>& on_stall) {
  while (phase_ends_ < count) pump(stall_, on_stall);
}

void control_channel::await_epochs(const epoch_collector& epochs, std::size_t count) {
  while (epochs.completed() < count)
    pump(stall_, [&] {
      throw with_counts(run_failure(failure_kind::stall, -1, -1,
                                    "an epoch's evaluation or loss totals never came after the phase ended"));
    });
}

void control_channel::drain() {
  bool more = true;
  while (more)
    self_->receive(
        drop_the_rest(), caf::after(std::chrono::milliseconds(50)) >> [&] { more = false; });
}

std::vector<caf::actor_addr> control_channel::await_gone(std::vector<caf::actor_addr> actors,
                                                         std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto gone = [](const caf::actor_addr& a) { return caf::actor_cast<caf::strong_actor_ptr>(a) == nullptr; };
  for (;;) {  // what is queued here holds its senders: drop it, then see who is left
    self_->receive(
        drop_the_rest(), caf::after(std::chrono::milliseconds(5)) >> [] {});
    actors.erase(std::remove_if(actors.begin(), actors.end(), gone), actors.end());
    if (actors.empty() || std::chrono::steady_clock::now() >= deadline) return actors;
  }
}

bool control_channel::current(const caf::actor_addr& who) const { return watched_.count(who) > 0; }

int32_t control_channel::stage_of(const caf::actor_addr& who) const {
  auto it = watched_.find(who);
  return it == watched_.end() ? -1 : it->second;
}

std::vector<fault_counts> control_channel::take_epoch_faults() {
  std::vector<fault_counts> out(faults_.size());
  out.swap(epoch_faults_);
  return out;
}

void control_channel::on_fault(const fault_event& e) {
  if (e.generation != generation_ || e.stage < 0 || static_cast<std::size_t>(e.stage) >= faults_.size())
    return;
  fault_counts one;
  count(one, e.kind);
  faults_[e.stage] += one;
  epoch_faults_[e.stage] += one;
}

void control_channel::on_epoch_part(const stage_epoch_report& r) {
  if (!epochs_ || r.generation != generation_) return;
  to_shadows(static_cast<std::size_t>(r.report.stage),
             [&](epoch_collector& e) { e.add_stage(r.epoch, r.report); });
  epochs_->add_stage(r.epoch, r.report);
}

void control_channel::on_epoch_part(const epoch_loss_report& r) {
  if (!epochs_ || !current(caf::actor_cast<caf::actor_addr>(self_->current_sender()))) return;
  to_shadows(faults_.size(), [&](epoch_collector& e) { e.add_loss(r.epoch, totals_of(r.totals)); });
  epochs_->add_loss(r.epoch, totals_of(r.totals));
}

void control_channel::on_epoch_part(const eval_report& r) {
  if (!epochs_ || !current(caf::actor_cast<caf::actor_addr>(self_->current_sender()))) return;
  to_shadows(faults_.size(),
             [&](epoch_collector& e) { e.add_wave(r.epoch, r.loss_sum, r.correct, r.samples); });
  epochs_->add_wave(r.epoch, r.loss_sum, r.correct, r.samples);
}

void control_channel::on_cut_part(cut_part& p) {
  // Each producer's part follows every epoch part it sent before the cut and precedes those after:
  // a cut's shadow starts as the epochs when its first part came (nothing after the cut is in them
  // yet) and takes the parts of the producers whose part of it is not in yet.
  if (!cuts_fn_ || !epochs_ || !current(caf::actor_cast<caf::actor_addr>(self_->current_sender())) ||
      p.tick <= abandoned_upto_)
    return;
  const std::size_t J = faults_.size();
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
  const nlohmann::json epochs = c.shadow.save();
  const int64_t tick = it->first;
  cuts_.erase(it);
  cuts_fn_(tick, parts, epochs);
}

void control_channel::count(fault_counts& f, fault_kind kind) {
  switch (kind) {
    case fault_kind::drop:
      ++f.drops;
      break;
    case fault_kind::duplicate:
      ++f.duplicates;
      break;
    case fault_kind::reorder:
      ++f.reorders;
      break;
    case fault_kind::delay:
      ++f.delays;
      break;
    case fault_kind::slow:
      ++f.slowed;
      break;
    case fault_kind::crash:
      ++f.crashes;
      break;
    case fault_kind::duplicate_discarded:
      ++f.duplicates_discarded;
      break;
  }
}

void control_channel::on_progress(const loss_report& r) {
  if (!current(caf::actor_cast<caf::actor_addr>(self_->current_sender()))) return;
  last_loss_ = r;
  notify();
}

void control_channel::on_window(const window_report& w) {
  if (w.generation != generation_ || w.stage < 0 || static_cast<std::size_t>(w.stage) >= windows_.size())
    return;
  stage_window& mine = windows_[w.stage];
  if (mine.stage < 0) ++windows_seen_;
  mine = stage_window{w.stage, w.optimizer_steps, w.staleness_mean, w.inversion_error_mean, w.ended_by};
  if (w.stage == 0) notify();  // stage 1's steps are what the per-step lines count
}

void control_channel::notify() {
  if (!progress_) return;
  // Step lines need every stage's window: until each sent one, none is shown.
  progress_(last_loss_, windows_seen_ == windows_.size() ? windows_ : std::vector<stage_window>{});
}

void control_channel::on_phase_done(const phase_done& d) {
  if (d.generation == generation_) ++phase_ends_;
}

void control_channel::finish_cuts(int32_t lost) {
  // A cut still waiting for parts of live actors when the attempt fails: they were sent before the
  // failure or come at once; a cut that needs the lost producer's part is given up.
  const std::size_t J = faults_.size();
  const std::size_t producer = lost < 0 ? J : static_cast<std::size_t>(lost);
  auto completable = [&] {
    for (const auto& [tick, c] : cuts_)
      if (producer >= c.parts.size() || c.parts[producer]) return true;
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  bool waiting = true;
  while (waiting && cuts_fn_ && completable()) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) break;
    self_->receive(
        [&](cut_part& p) { on_cut_part(p); }, [&](stage_epoch_report& r) { on_epoch_part(r); },
        [&](epoch_loss_report& r) { on_epoch_part(r); }, [&](eval_report& r) { on_epoch_part(r); },
        caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left)) >> [&] { waiting = false; });
  }
}

void control_channel::on_failure(const failure_report& f) {
  const auto sender = caf::actor_cast<caf::actor_addr>(self_->current_sender());
  if (!current(sender)) return;  // from a pipeline already torn down
  run_failure failure = with_counts(run_failure(kind_of(f.code), f.stage, f.tick, f.what));
  finish_cuts(f.stage);
  throw failure;
}

void control_channel::on_down(const caf::down_msg& down) {
  if (!current(down.source)) return;
  if (has_code(down.reason, petra_errc::bad_data)) {  // not a failure to replay: the data must change
    const caf::message& context = down.reason.context();
    throw data::dataset_error(context.match_elements<std::string>() ? context.get_as<std::string>(0)
                                                                    : system_.render(down.reason));
  }
  const int32_t stage = stage_of(down.source);
  const std::string what = (stage >= 0 ? "stage actor lost: " : "actor lost: ") + system_.render(down.reason);
  const bool crash = has_code(down.reason, petra_errc::injected_crash);
  run_failure failure = with_counts(
      run_failure(crash ? failure_kind::injected_crash : failure_kind::lost_actor, stage, -1, what));
  finish_cuts(stage);
  throw failure;
}

void control_channel::on_error(const caf::error& err) {
  const auto sender = caf::actor_cast<caf::actor_addr>(self_->current_sender());
  if (!current(sender)) return;
  throw with_counts(run_failure(failure_kind::bad_reply, stage_of(sender), -1, system_.render(err)));
}

run_failure control_channel::no_answer_from(const std::vector<caf::actor_addr>& silent,
                                            std::chrono::seconds timeout) {
  const int32_t stage = silent.empty() ? -1 : stage_of(silent.front());
  return with_counts(run_failure(failure_kind::bad_reply, stage, -1,
                                 "no answer within " + std::to_string(timeout.count()) + " s from " +
                                     std::to_string(silent.size()) + " actor(s)"));
}

run_failure control_channel::with_counts(run_failure f) const {
  f.faults = faults_;
  return f;
}

}  // namespace petra

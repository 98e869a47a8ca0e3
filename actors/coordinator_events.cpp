// The trainer thread's record of its pipeline's events, taken in from messages.
#include "actors/coordinator_events.hpp"

#include <algorithm>
#include <cstdio>

#include "datasets/dataset.hpp"
#include "messages/errors.hpp"
#include "messages/type_ids.hpp"

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

void count(fault_counts& f, fault_kind kind) {
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
    case fault_kind::fenced:  // a late message, dropped by its receiver
      ++f.duplicates_discarded;
      break;
  }
}

}  // namespace

void coordinator_events::take_in(const caf::actor_addr& from, caf::message& m) {
  if (m.match_elements<fault_event>()) return on_fault(from, m.get_as<fault_event>(0));
  if (m.match_elements<loss_report>()) return on_progress(from, m.get_as<loss_report>(0));
  if (m.match_elements<window_report>()) return on_window(from, m.get_as<window_report>(0));
  if (m.match_elements<phase_done>()) return on_phase_done(from, m.get_as<phase_done>(0));
  if (m.match_elements<stage_epoch_report>())
    return on_epoch_part(from, std::move(m.get_mutable_as<stage_epoch_report>(0)));
  if (m.match_elements<epoch_loss_report>())
    return on_epoch_part(from, std::move(m.get_mutable_as<epoch_loss_report>(0)));
  if (m.match_elements<eval_report>())
    return on_epoch_part(from, std::move(m.get_mutable_as<eval_report>(0)));
  if (m.match_elements<cut_part>()) return on_cut_part(from, std::move(m.get_mutable_as<cut_part>(0)));
  if (m.match_elements<failure_report>()) return on_failure(from, m.get_as<failure_report>(0));
  if (m.match_elements<caf::down_msg>()) return on_down(m.get_as<caf::down_msg>(0));
  if (m.match_elements<atoms::silent_atom, std::string, double, double>())
    return on_node_silent(m.get_as<std::string>(1), from, m.get_as<double>(2), m.get_as<double>(3));
  if (m.match_elements<atoms::late_atom, std::string>()) ++late_;
}

void coordinator_events::on_fault(const caf::actor_addr& from, const fault_event& e) {
  if (late(from)) return;
  if (e.kind == fault_kind::fenced) ++late_;
  if (e.generation != generation_ || e.stage < 0 || static_cast<std::size_t>(e.stage) >= faults_.size())
    return;
  fault_counts one;
  count(one, e.kind);
  faults_[e.stage] += one;
  epoch_faults_[e.stage] += one;
  ++fault_events_[e.stage];
}

void coordinator_events::on_progress(const caf::actor_addr& from, const loss_report& r) {
  if (late(from) || !watching(from)) return;
  last_loss_ = r;
  // Step lines need every stage's window: until each sent one, none is shown.
  keep({coordinator_notice::progress{
            r, windows_seen_ == windows_.size() ? windows_ : std::vector<stage_window>{}},
        from, true});
}

void coordinator_events::on_window(const caf::actor_addr& from, const window_report& w) {
  if (late(from)) return;
  if (w.generation != generation_ || w.stage < 0 || static_cast<std::size_t>(w.stage) >= windows_.size())
    return;
  stage_window& mine = windows_[w.stage];
  if (mine.stage < 0) ++windows_seen_;
  mine = stage_window{w.stage, w.optimizer_steps, w.staleness_mean, w.inversion_error_mean, w.ended_by};
  if (w.stage != 0) return;  // stage 1's steps are what the per-step lines count
  keep({coordinator_notice::progress{
            last_loss_, windows_seen_ == windows_.size() ? windows_ : std::vector<stage_window>{}},
        {},
        false});
}

void coordinator_events::on_epoch_part(const caf::actor_addr& from, stage_epoch_report r) {
  if (!late(from) && r.generation == generation_) keep({std::move(r), from, false});
}

void coordinator_events::on_epoch_part(const caf::actor_addr& from, epoch_loss_report r) {
  if (!late(from) && watching(from)) keep({std::move(r), from, true});
}

void coordinator_events::on_epoch_part(const caf::actor_addr& from, eval_report r) {
  if (!late(from) && watching(from)) keep({std::move(r), from, true});
}

void coordinator_events::on_cut_part(const caf::actor_addr& from, cut_part p) {
  if (!late(from) && watching(from) && p.tick > abandoned_upto_) keep({std::move(p), from, true});
}

void coordinator_events::on_phase_done(const caf::actor_addr& from, const phase_done& d) {
  if (late(from) || d.generation != generation_) return;
  ++phase_ends_;
}

void coordinator_events::on_failure(const caf::actor_addr& from, const failure_report& f) {
  if (late(from) || !watching(from)) return;  // from a pipeline already torn down
  fail(from, std::make_exception_ptr(with_counts(run_failure(kind_of(f.code), f.stage, f.tick, f.what))),
       f.stage);
}

void coordinator_events::on_down(const caf::down_msg& down) {
  if (!watching(down.source)) return;
  if (has_code(down.reason, petra_errc::bad_data)) {  // not a failure to replay: the data must change
    const caf::message& context = down.reason.context();
    const std::string what =
        context.match_elements<std::string>() ? context.get_as<std::string>(0) : system_.render(down.reason);
    return fail(down.source, std::make_exception_ptr(data::dataset_error(what)), -1, false);
  }
  const int32_t stage = stage_of(down.source);
  const std::string what = (stage >= 0 ? "stage actor lost: " : "actor lost: ") + system_.render(down.reason);
  const bool crash = has_code(down.reason, petra_errc::injected_crash);
  fail(down.source,
       std::make_exception_ptr(with_counts(
           run_failure(crash ? failure_kind::injected_crash : failure_kind::lost_actor, stage, -1, what))),
       stage);
}

void coordinator_events::on_node_silent(const std::string& where, const caf::actor_addr& node,
                                        double silent_s, double timeout_s) {
  lost_nodes_.insert(where);
  fenced_.insert(node);
  const auto placed = node_stage_.find(where);
  if (placed == node_stage_.end()) return;  // not a node of the running pipeline
  const int32_t stage = placed->second;
  char text[160];
  std::snprintf(text, sizeof text,
                "node %s silent for %.1f s (runtime.heartbeat_timeout %g s): declared lost", where.c_str(),
                silent_s, timeout_s);
  fail(node, std::make_exception_ptr(with_counts(run_failure(failure_kind::lost_actor, stage, -1, text))),
       stage);
}

void coordinator_events::fence(const caf::actor_addr& who) {
  fenced_.insert(who);
  watched_.erase(who);
}

void coordinator_events::watch(const std::vector<caf::actor_addr>& actors,
                               const std::vector<int32_t>& stage_of, int32_t generation) {
  watched_.clear();
  for (std::size_t i = 0; i < actors.size(); ++i) watched_[actors[i]] = stage_of[i];
  generation_ = generation;
  queue_.clear();
}

void coordinator_events::unwatch(const caf::actor_addr& who) {
  watched_.erase(who);
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [&](const coordinator_notice& n) { return n.by_sender && n.source == who; }),
               queue_.end());
}

void coordinator_events::begin_attempt(std::size_t stages) {
  faults_.assign(stages, fault_counts{});
  fault_events_.assign(stages, 0);
  if (epoch_faults_.size() != stages) epoch_faults_.assign(stages, fault_counts{});
  windows_.assign(stages, stage_window{});
  windows_seen_ = 0;
  last_loss_ = loss_report{};
  phase_ends_ = 0;
  abandoned_upto_ = -1;
}

void coordinator_events::abandon_cuts(int64_t upto) {
  abandoned_upto_ = std::max(abandoned_upto_, upto);
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [&](const coordinator_notice& n) {
                                const auto* p = std::get_if<cut_part>(&n.what);
                                return p && p->tick <= upto;
                              }),
               queue_.end());
}

void coordinator_events::count_kill(int32_t stage) {
  if (stage < 0 || static_cast<std::size_t>(stage) >= faults_.size()) return;
  ++faults_[stage].kills;
  ++epoch_faults_[stage].kills;
}

std::vector<fault_counts> coordinator_events::take_epoch_faults() {
  std::vector<fault_counts> out(faults_.size());
  out.swap(epoch_faults_);
  return out;
}

bool coordinator_events::fault_events_in(const std::vector<int64_t>& sent) const {
  for (std::size_t j = 0; j < sent.size() && j < fault_events_.size(); ++j)
    if (fault_events_[j] < sent[j]) return false;
  return true;
}

int32_t coordinator_events::stage_of(const caf::actor_addr& who) const {
  auto it = watched_.find(who);
  return it == watched_.end() ? -1 : it->second;
}

std::optional<coordinator_notice> coordinator_events::take(
    const std::function<bool(const coordinator_notice&)>& wanted) {
  auto it = wanted ? std::find_if(queue_.begin(), queue_.end(), wanted) : queue_.begin();
  if (it == queue_.end()) return std::nullopt;
  coordinator_notice out = std::move(*it);
  queue_.erase(it);
  return out;
}

bool coordinator_events::late(const caf::actor_addr& from) {
  if (fenced_.count(from) == 0) return false;
  ++late_;
  return true;
}

void coordinator_events::fail(const caf::actor_addr& from, std::exception_ptr error, int32_t stage,
                              bool ends_cuts) {
  keep({coordinator_notice::failure{std::move(error), stage, ends_cuts}, from, true});
}

}  // namespace petra

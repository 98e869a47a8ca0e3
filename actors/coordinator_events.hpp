// The trainer thread's record of its pipeline's events: the actors it watches, the faults, step
// windows, loss totals and phase ends of the running attempt, and the queue of what the trainer
// must act on (progress, epoch and cut parts, failures). It is fed only by messages: the events the
// coordinator actor hands on (actors/coordinator_actor.hpp) and the heartbeats' verdicts, each taken
// in on the trainer thread (control_channel) in the order it came; nothing else writes it.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "messages/messages.hpp"
#include "training/faults.hpp"
#include "training/stage_window.hpp"

namespace petra {

/// One event the trainer thread acts on, in the order the coordinator actor took it.
struct coordinator_notice {
  /// The loss actor's totals of the phase so far and each stage's latest window of optimizer steps
  /// (empty until every stage sent one).
  struct progress {
    messages::loss_report loss;
    std::vector<stage_window> windows;
  };
  /// What ends the attempt: thrown on the trainer thread. `stage` is the lost producer of cuts
  /// (-1: the loss actor); `ends_cuts`: the pending cuts may complete first (not for bad data).
  struct failure {
    std::exception_ptr error;
    int32_t stage = -1;
    bool ends_cuts = true;
  };
  std::variant<progress, messages::stage_epoch_report, messages::epoch_loss_report, messages::eval_report,
               messages::cut_part, failure>
      what;
  caf::actor_addr source;  // who sent it
  bool by_sender = false;  // kept because `source` was watched: stale once it no longer is
};

class coordinator_events {
 public:
  explicit coordinator_events(caf::actor_system& system) : system_(system) {}

  /// Takes in one event from `from`: what the coordinator actor handed on (a phase end, failure,
  /// fault, loss total, step window, epoch or cut part, or a down_msg of a monitored actor), or a
  /// heartbeat verdict on the node `from` ((silent_atom, host:port, silent s, timeout s): lost, like a
  /// crashed node, the attempt fails at the first stage it holds; (late_atom, host:port): a late
  /// message of a lost node, dropped where it arrived). Anything else is ignored.
  void take_in(const caf::actor_addr& from, caf::message& event);

  /// The nodes (host:port) of the current pipeline and the first stage each holds.
  void place_nodes(std::map<std::string, int32_t> first_stage) { node_stage_ = std::move(first_stage); }
  /// Whether the heartbeats declared the node at `where` lost.
  bool declared_lost(const std::string& where) const { return lost_nodes_.count(where) > 0; }
  /// Everything `who` (an actor of a lost node) sends from now on is late: dropped and counted.
  void fence(const caf::actor_addr& who);
  /// Late messages of lost nodes dropped so far: here, at the stages, at the heartbeat monitor.
  int64_t late_messages() const { return late_; }

  /// The actors of the current pipeline and which stage each is (-1 = not a stage); what is queued
  /// of earlier ones is dropped.
  void watch(const std::vector<caf::actor_addr>& actors, const std::vector<int32_t>& stage_of,
             int32_t generation);
  void watch_extra(const caf::actor_addr& who, int32_t stage) { watched_[who] = stage; }
  /// `who`'s events are stale from now on, those queued too.
  void unwatch(const caf::actor_addr& who);
  /// Faults, windows, loss totals and phase ends count from zero.
  void begin_attempt(std::size_t stages);
  /// Cut parts up to tick `upto` are dropped, now and when they come.
  void abandon_cuts(int64_t upto);
  void count_kill(int32_t stage);
  std::vector<fault_counts> take_epoch_faults();
  std::vector<fault_counts> faults() const { return faults_; }
  /// Whether every stage's fault events of the phase, `sent[j]` by stage j (its report's count),
  /// have been taken in.
  bool fault_events_in(const std::vector<int64_t>& sent) const;
  std::size_t phase_ends() const { return phase_ends_; }
  bool current(const caf::actor_addr& who) const { return watching(who); }
  int32_t stage_of(const caf::actor_addr& who) const;
  /// `f` with the faults of the attempt so far.
  run_failure with_counts(run_failure f) const {
    f.faults = faults_;
    return f;
  }
  /// The oldest queued notice that `wanted` accepts (any when empty), taken off the queue.
  std::optional<coordinator_notice> take(const std::function<bool(const coordinator_notice&)>& wanted = {});

 private:
  void on_fault(const caf::actor_addr& from, const messages::fault_event& e);
  void on_progress(const caf::actor_addr& from, const messages::loss_report& r);
  void on_window(const caf::actor_addr& from, const messages::window_report& w);
  void on_epoch_part(const caf::actor_addr& from, messages::stage_epoch_report r);
  void on_epoch_part(const caf::actor_addr& from, messages::epoch_loss_report r);
  void on_epoch_part(const caf::actor_addr& from, messages::eval_report r);
  void on_cut_part(const caf::actor_addr& from, messages::cut_part p);
  void on_phase_done(const caf::actor_addr& from, const messages::phase_done& d);
  void on_failure(const caf::actor_addr& from, const messages::failure_report& f);
  void on_down(const caf::down_msg& down);
  void on_node_silent(const std::string& where, const caf::actor_addr& node, double silent_s,
                      double timeout_s);

  bool watching(const caf::actor_addr& who) const { return watched_.count(who) > 0; }
  /// True (and counted) when `from` is fenced: its message is dropped.
  bool late(const caf::actor_addr& from);
  void keep(coordinator_notice n) { queue_.push_back(std::move(n)); }
  void fail(const caf::actor_addr& from, std::exception_ptr error, int32_t stage, bool ends_cuts = true);

  caf::actor_system& system_;
  std::map<caf::actor_addr, int32_t> watched_;  // actor → stage (-1 = not a stage)
  int32_t generation_ = 0;
  std::vector<fault_counts> faults_;        // in the running attempt
  std::vector<int64_t> fault_events_;       // per stage, fault events taken in the running attempt
  std::vector<fault_counts> epoch_faults_;  // since the last epoch ended
  std::vector<stage_window> windows_;       // per stage, the latest
  std::size_t windows_seen_ = 0;
  messages::loss_report last_loss_;  // the phase's totals so far
  std::size_t phase_ends_ = 0;
  int64_t abandoned_upto_ = -1;
  std::deque<coordinator_notice> queue_;
  std::map<std::string, int32_t> node_stage_;  // host:port → the first stage it holds
  std::set<std::string> lost_nodes_;           // host:port declared lost by the heartbeats
  std::set<caf::actor_addr> fenced_;           // their actors
  int64_t late_ = 0;
};

}  // namespace petra

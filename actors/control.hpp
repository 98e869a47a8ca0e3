// The trainer thread's side of the coordinator: control messages to many actors at once with their
// replies gathered, and the events of the running pipeline — phase ends, failure reports, lost
// actors, loss progress, epoch and cut parts, the heartbeats' verdicts — as messages the coordinator
// actor (actors/coordinator_actor.hpp) and the heartbeat monitor send here: taken into the trainer's
// record (actors/coordinator_events.hpp) and acted on wherever the trainer waits, so a lost actor or
// a stall ends the attempt at once, never at a timeout. Before the trainer reads or changes the
// record it takes in every event that has arrived, so it sees them as they came.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "actors/coordinator_actor.hpp"
#include "actors/coordinator_events.hpp"
#include "actors/heartbeat.hpp"
#include "messages/errors.hpp"
#include "messages/interfaces.hpp"
#include "training/awake_timer.hpp"
#include "training/epoch_collector.hpp"
#include "training/faults.hpp"
#include "training/stage_window.hpp"

namespace petra {

/// How long the trainer waits for an actor's reply to a control request (plan, report, restore,
/// move) before it counts the actor as lost.
inline constexpr auto control_timeout = std::chrono::seconds(60);

/// The loss actor's totals as the trainer loop counts them.
run_totals totals_of(const messages::loss_report& r);

class control_channel {
 public:
  /// Spawns the coordinator actor. `stall` bounds every wait for the pipeline's progress
  /// (faults.stall_seconds).
  control_channel(caf::actor_system& system, std::chrono::seconds stall);
  ~control_channel();
  control_channel(const control_channel&) = delete;
  control_channel& operator=(const control_channel&) = delete;

  /// The trainer thread's actor: control requests go out from it, their replies come back to it.
  caf::scoped_actor& self() { return self_; }
  /// The coordinator as its pipeline's actors see it.
  messages::coordinator_actor handle() const { return coordinator_; }

  /// The actors of the current pipeline (their loss ends an attempt) and which stage each is
  /// (-1 = not a stage); events of any other actor are stale and dropped.
  void watch(const std::vector<caf::actor_addr>& actors, const std::vector<int32_t>& stage_of,
             int32_t generation) {
    take_in_arrived();
    events_.watch(actors, stage_of, generation);
  }
  /// Also watches one more actor while a request to it is out (a node), or a rebuilt stage.
  void watch_extra(const caf::actor_addr& who, int32_t stage) {
    take_in_arrived();
    events_.watch_extra(who, stage);
  }
  /// No longer watches `who` (a lost actor, once its loss is handled): its events are stale.
  void unwatch(const caf::actor_addr& who) {
    take_in_arrived();
    events_.unwatch(who);
  }
  /// The coordinator actor monitors `who`: its loss, while watched, ends the attempt.
  template <class Handle>
  void monitor(const Handle& who) {
    caf::anon_send(coordinator_, atoms::watch_atom_v, caf::actor_cast<caf::actor>(who));
  }
  /// Fencing (actors/heartbeat.hpp): the heartbeats' verdicts (runtime.heartbeat_timeout
  /// `timeout_s`), sent here as messages from the heartbeat monitor's thread.
  heartbeat_verdicts verdicts(double timeout_s) const;
  /// The nodes (host:port) of the current pipeline and the first stage each holds.
  void place_nodes(std::map<std::string, int32_t> first_stage) {
    take_in_arrived();
    events_.place_nodes(std::move(first_stage));
  }
  bool declared_lost(const std::string& where) {
    take_in_arrived();
    return events_.declared_lost(where);
  }
  /// What `who` (an actor of a lost node) sends from now on is dropped and counted.
  void fence(const caf::actor_addr& who) {
    take_in_arrived();
    events_.fence(who);
  }
  /// Late messages of lost nodes dropped so far.
  int64_t late_messages() {
    take_in_arrived();
    return events_.late_messages();
  }
  /// Gives up the cuts up to tick `upto` that are not complete (stage-local recovery): their parts
  /// are dropped, now and when they come.
  void abandon_cuts(int64_t upto);

  /// Called with the loss actor's totals of the phase so far and each stage's latest window of
  /// optimizer steps (empty when per-step metrics are off).
  using progress_fn = std::function<void(const messages::loss_report&, const std::vector<stage_window>&)>;
  /// Starts counting an attempt: faults, windows and phase ends from zero; the parts of the epochs
  /// that end in it go to `epochs`.
  void begin_attempt(std::size_t stages, progress_fn progress, epoch_collector* epochs);
  /// Called when every part of a cut is in (the stages' in stage order, the loss actor's last),
  /// with the epochs as they stood at the cut: {"open": epoch_collector::save, "done": the epochs
  /// whole before it}.
  using cut_fn =
      std::function<void(int64_t tick, std::vector<messages::cut_part>& parts, const nlohmann::json& epochs)>;
  /// Where the attempt's cuts go (none: parts are dropped).
  void on_cuts(cut_fn fn) {
    cuts_fn_ = std::move(fn);
    cuts_.clear();
  }
  /// The faults injected since the previous call (an epoch's), per stage.
  std::vector<fault_counts> take_epoch_faults() {
    take_in_arrived();
    return events_.take_epoch_faults();
  }
  /// Counts a fault injected by the coordinator itself (a node kill) at `stage`.
  void count_kill(int32_t stage) {
    take_in_arrived();
    events_.count_kill(stage);
  }
  std::vector<fault_counts> faults() {
    take_in_arrived();
    return events_.faults();
  }
  /// The phase's faults once the coordinator actor took every fault event the stages' `reports`
  /// count (at most `timeout` later; then as far as counted).
  std::vector<fault_counts> faults_after(const std::vector<stage_report>& reports,
                                         std::chrono::milliseconds timeout);

  /// Waits until `count` stages reported the end of their phase; `on_stall` names what stopped
  /// when nothing arrives for the stall time (it throws).
  void await_phase_ends(std::size_t count, const std::function<void()>& on_stall);
  /// Waits until `epochs` holds epochs `first`..`last` whole (none when first > last).
  void await_epochs(const epoch_collector& epochs, int first, int last);

  /// Sends `msg...` to every target and returns their replies, in target order. A target that
  /// is lost, fails or does not answer within `timeout` ends the attempt (run_failure).
  template <class Reply, class Handle, class... Ts>
  std::vector<Reply> gather(const std::vector<Handle>& targets, std::chrono::seconds timeout,
                            const Ts&... msg) {
    std::map<caf::actor_addr, std::size_t> index;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      index[targets[i].address()] = i;
      self_->send(targets[i], msg...);
    }
    std::vector<Reply> replies(targets.size());
    std::vector<bool> got(targets.size(), false);
    std::size_t missing = targets.size();
    while (missing > 0) {
      pump(
          timeout, [&] { throw no_answer(targets, got, timeout); },
          [&](Reply& r) {
            auto it = index.find(caf::actor_cast<caf::actor_addr>(self_->current_sender()));
            if (it == index.end() || got[it->second]) return;
            replies[it->second] = std::move(r);
            got[it->second] = true;
            --missing;
          });
    }
    return replies;
  }

  /// One target's reply.
  template <class Reply, class Handle, class... Ts>
  Reply ask(const Handle& target, std::chrono::seconds timeout, const Ts&... msg) {
    return std::move(gather<Reply>(std::vector<Handle>{target}, timeout, msg...).front());
  }

  /// Drops whatever is queued (a torn-down pipeline's leftovers).
  void drain();
  /// Waits (at most `timeout`) until every one of `actors` has terminated and no longer exists,
  /// dropping whatever they or others sent here meanwhile. A message in this mailbox keeps its
  /// sender alive, and a detached actor that outlives its actor system blocks that system's
  /// destructor (CAF 0.17 waits for its thread): the runtime calls this before it goes away.
  /// Returns the actors still referenced when time ran out.
  std::vector<caf::actor_addr> await_gone(std::vector<caf::actor_addr> actors,
                                          std::chrono::milliseconds timeout);

 private:
  /// Acts on one event the coordinator actor kept, else handles one message here: `handlers...`
  /// first (replies); `on_timeout` when nothing comes within `timeout` of this process's awake
  /// time (training/awake_timer.hpp: a process stopped or starved meanwhile does not time out on
  /// waking).
  template <class... Fs>
  void pump(std::chrono::seconds timeout, const std::function<void()>& on_timeout, Fs... handlers) {
    if (auto notice = events_.take()) return act_on(*notice);
    awake_timer quiet(timeout);
    for (bool waiting = true; waiting;) {
      const awake_timer::duration slice = quiet.next_slice();
      const auto asked_at = std::chrono::steady_clock::now();
      waiting = false;
      self_->receive(
          handlers..., [&](caf::error& err) { on_error(err); }, take_event(),
          drop_the_rest(),  // e.g. a reply nobody waits for any more
          caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(slice)) >>
              [&] { waiting = !quiet.timed_out_after(slice, std::chrono::steady_clock::now() - asked_at); });
    }
    if (quiet.expired()) on_timeout();
  }

  /// A blocking receive's catch-all (CAF 0.17): what no handler before it matches is dropped. A
  /// handler of `caf::message&` is not one: it matches nothing, and unmatched messages would stay
  /// queued, each holding its sender alive.
  static auto drop_the_rest() {
    return caf::others >> [](caf::message_view&) -> caf::result<caf::message> { return caf::message{}; };
  }
  /// The receive handler of an event sent here: taken into the record, not acted on.
  auto take_event() {
    return [this](atoms::event_atom, caf::actor_addr& from, caf::message& event) {
      events_.take_in(from, event);
    };
  }
  /// Takes in every event that has arrived (replies stay queued).
  void take_in_arrived();
  void act_on(coordinator_notice& notice);
  void on_epoch_part(const messages::stage_epoch_report& r);
  void on_epoch_part(const messages::epoch_loss_report& r);
  void on_epoch_part(const messages::eval_report& r);
  void on_cut_part(messages::cut_part& p);
  /// When the attempt fails: waits (2 s at most) for the parts of pending cuts that do not need
  /// the `lost` producer (a stage, or −1 for the loss actor).
  void finish_cuts(int32_t lost);
  /// A part of an epoch from `producer` (a stage, or stages_ for the loss actor) to every pending
  /// cut that producer has not reached yet.
  template <class F>
  void to_shadows(std::size_t producer, F feed) {
    for (auto& [tick, c] : cuts_)
      if (!c.parts[producer]) feed(c.shadow);
  }
  void on_error(const caf::error& err);
  template <class Handle>
  run_failure no_answer(const std::vector<Handle>& targets, const std::vector<bool>& got,
                        std::chrono::seconds timeout) {
    std::vector<caf::actor_addr> silent;
    for (std::size_t i = 0; i < targets.size(); ++i)
      if (!got[i]) silent.push_back(targets[i].address());
    return no_answer_from(silent, timeout);
  }
  run_failure no_answer_from(const std::vector<caf::actor_addr>& silent, std::chrono::seconds timeout);

  caf::scoped_actor self_;
  coordinator_events events_;
  coordinator_control coordinator_;
  std::chrono::seconds stall_;
  std::size_t stages_ = 0;
  epoch_collector* epochs_ = nullptr;
  progress_fn progress_;
  struct pending_cut {
    std::vector<std::optional<messages::cut_part>> parts;  // the stages', then the loss actor's
    std::size_t in = 0;
    epoch_collector shadow;  // the epochs as the parts sent before the cut make them
  };
  std::map<int64_t, pending_cut> cuts_;  // by tick
  cut_fn cuts_fn_;
};

}  // namespace petra

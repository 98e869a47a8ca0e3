// The coordinator actor: each handler is one call into its record of events.
#include "actors/coordinator_actor.hpp"

namespace petra {

using namespace messages;

namespace {

coordinator_control::behavior_type coordinator(coordinator_control::pointer self,
                                               std::shared_ptr<coordinator_events> events) {
  self->set_down_handler([events](caf::down_msg& down) { events->on_down(down); });
  auto from = [self] { return caf::actor_cast<caf::actor_addr>(self->current_sender()); };
  return {
      [=](phase_done& d) { events->on_phase_done(from(), d); },
      [=](failure_report& f) { events->on_failure(from(), f); },
      [=](fault_event& e) { events->on_fault(from(), e); },
      [=](loss_report& r) { events->on_progress(from(), r); },
      [=](window_report& w) { events->on_window(from(), w); },
      [=](stage_epoch_report& r) { events->on_epoch_part(from(), std::move(r)); },
      [=](epoch_loss_report& r) { events->on_epoch_part(from(), std::move(r)); },
      [=](eval_report& r) { events->on_epoch_part(from(), std::move(r)); },
      [=](cut_part& p) { events->on_cut_part(from(), std::move(p)); },
      [=](atoms::watch_atom, caf::actor& who) { self->monitor(who); },
  };
}

}  // namespace

coordinator_control spawn_coordinator(caf::actor_system& system, std::shared_ptr<coordinator_events> events) {
  return system.spawn(coordinator, std::move(events));
}

}  // namespace petra

// The coordinator actor: each event goes on to the trainer thread with its sender.
#include "actors/coordinator_actor.hpp"

namespace petra {

using namespace messages;

namespace {

coordinator_control::behavior_type coordinator(coordinator_control::pointer self, caf::actor_addr trainer) {
  auto hand_on = [trainer](const caf::actor_addr& from, caf::message event) {
    if (auto to = caf::actor_cast<caf::actor>(trainer))
      caf::anon_send(to, atoms::event_atom_v, from, std::move(event));
  };
  self->set_down_handler([hand_on](caf::down_msg& down) { hand_on(down.source, caf::make_message(down)); });
  auto from = [self] { return caf::actor_cast<caf::actor_addr>(self->current_sender()); };
  auto event = [=](auto& e) { hand_on(from(), caf::make_message(std::move(e))); };
  return {
      [=](phase_done& d) { event(d); },
      [=](failure_report& f) { event(f); },
      [=](fault_event& e) { event(e); },
      [=](loss_report& r) { event(r); },
      [=](window_report& w) { event(w); },
      [=](stage_epoch_report& r) { event(r); },
      [=](epoch_loss_report& r) { event(r); },
      [=](eval_report& r) { event(r); },
      [=](cut_part& p) { event(p); },
      [=](atoms::watch_atom, caf::actor& who) { self->monitor(who); },
  };
}

}  // namespace

coordinator_control spawn_coordinator(caf::actor_system& system, caf::actor_addr trainer) {
  return system.spawn(coordinator, std::move(trainer));
}

}  // namespace petra

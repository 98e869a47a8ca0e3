// The typed actor interface of each role. A stage's neighbours are seen through the one message
// each sends it (forward_sink, backward_sink, loss_sink): typed handles end to end, and no
// interface has to name itself.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/type_ids.hpp"

namespace petra::messages {

/// What a stage is to the stage before it.
using forward_sink = caf::typed_actor<caf::reacts_to<forward_data>>;
/// What a stage is to the stage after it.
using backward_sink = caf::typed_actor<caf::reacts_to<backward_data>>;
/// What the last stage is to the loss actor.
using loss_sink = caf::typed_actor<caf::reacts_to<loss_data>>;
/// What a stage is to the loss actor under forward_gradient (its directional derivatives).
using derivatives_sink = caf::typed_actor<caf::reacts_to<derivatives_data>>;
/// What the loader is to whoever returns its credits.
using credit_sink = caf::typed_actor<caf::reacts_to<credit_return>>;

/// What the coordinator is to the actors of its pipeline: phase ends, failures, injected faults and
/// the loss actor's progress arrive here.
using coordinator_actor =
    caf::typed_actor<caf::reacts_to<phase_done>, caf::reacts_to<failure_report>, caf::reacts_to<fault_event>,
                     caf::reacts_to<loss_report>, caf::reacts_to<window_report>,
                     caf::reacts_to<stage_epoch_report>, caf::reacts_to<epoch_loss_report>,
                     caf::reacts_to<eval_report>, caf::reacts_to<cut_part>>;

/// Whom the loss actor talks to, and the sizes it scores by: the last stage (training losses), the
/// coordinator, the loader (async: an evaluation batch's credit; invalid in lockstep, where credits
/// count ticks), micro-batches per epoch and batches per evaluation wave.
struct loss_links {
  loss_sink last_stage;
  coordinator_actor coordinator;
  credit_sink loader;
  int64_t per_epoch = 0;
  int64_t wave_size = 0;
  int32_t last_generation = 0;  // the last stage's (stamp::generation): older logits are a fenced stage's
  std::vector<derivatives_sink> stages{};  // forward_gradient: every stage, for its derivatives
};

/// The loss actor: labels from the loader; logits from the last stage, answered with a loss_data
/// message to the wired last stage (forward_gradient: and a derivatives_data message to each stage
/// whose guess the logits carry a tangent of); evaluation logits of the waves (scored per epoch, an
/// eval_report to the coordinator when a wave is complete, a credit back to the loader per batch); evaluation
/// logits with their labels on request; its totals per phase; the last stage's marker of a cut
/// (the loss actor's part goes to the coordinator) and, to resume, its part of a cut back; state
/// (drained, between phases) → its ledger as a cut's part, for the loss actor that takes its place
/// when the pipeline is built anew (restore with the part). Stage-local recovery: hold → the
/// evaluation batches of the phase scored so far; recover → forgets the labels of the cancelled
/// micro-batches and drops their logits should any still come (until a re-issued one's labels come
/// again).
using loss_actor = caf::typed_actor<
    caf::replies_to<loss_links>::with<atoms::wire_atom>, caf::reacts_to<labels_data>,
    caf::reacts_to<logits_data>, caf::replies_to<atoms::eval_atom, logits_data, labels_data>::with<loss_data>,
    caf::replies_to<atoms::report_atom>::with<loss_report>, caf::reacts_to<cut_marker>,
    caf::replies_to<atoms::restore_atom, cut_part>::with<atoms::restore_atom>,
    caf::replies_to<atoms::state_atom>::with<std::string>, caf::replies_to<atoms::hold_atom>::with<int64_t>,
    caf::replies_to<atoms::recover_atom, recovery_order>::with<atoms::recover_atom>>;

/// Whom the loader feeds: the first stage (micro-batches) and the loss actor (labels), and how many
/// micro-batches it may have in flight before a credit comes back.
struct loader_links {
  forward_sink first_stage;
  loss_actor loss;
  int32_t credits = 1;
};

/// The data loader: a plan starts feeding a phase to the first stage (and labels to the loss
/// actor); credits come back from the first stage (and the loss actor: evaluation batches), stamped
/// with their phase: a credit that comes before its phase's plan counts there. Stage-local
/// recovery: hold stops the feed (answer, async: the tick of the last cut marker sent, -1 = none,
/// and its record of the phase: the training micro-batches in flight, sent, completed at stage 1,
/// the evaluation batches sent), recover resumes it, the order's lost micro-batches (async) sent
/// again first and, when stage 1 was lost with the order's `cancel`, their credits back.
using loader_actor =
    caf::typed_actor<caf::replies_to<loader_links>::with<atoms::wire_atom>,
                     caf::replies_to<atoms::plan_atom, phase_plan>::with<atoms::plan_atom>,
                     caf::reacts_to<credit_return>, caf::replies_to<atoms::hold_atom>::with<recovery_order>,
                     caf::replies_to<atoms::recover_atom, recovery_order>::with<atoms::recover_atom>>;

/// Whom a stage talks to: invalid handles where there is none (no previous stage for stage 1, no
/// next stage for the last one, which talks to the loss actor), and where each neighbour computes:
/// its device when it lives in the same process, cpu (the host) when a message to it is serialized.
struct stage_links {
  backward_sink prev;
  forward_sink next;
  device prev_device;
  device next_device;
  loss_actor loss;
  loader_actor loader;
  coordinator_actor coordinator;
  int32_t count = 1;  // J
  // Generations (stamp::generation): the stage's own, and the neighbours' whose messages it takes;
  // a message of another generation is a fenced stage's, dropped.
  int32_t generation = 0, prev_generation = 0, next_generation = 0;
};

/// A pipeline stage. Stage-local recovery (async): hold stops it (the answer says where it stands);
/// recover tells it what to forget and count, and it goes on. migrate (drained, between phases):
/// its whole state as a cut's part, for the actor that takes its place (restore with the part).
/// restore with a stage_report (a new cut of the model, drained): the running epoch's record that
/// the stage at its place kept, which it goes on from (counts, busy time, the epoch's clock).
using stage_actor =
    caf::typed_actor<caf::reacts_to<forward_data>, caf::reacts_to<backward_data>, caf::reacts_to<loss_data>,
                     caf::reacts_to<derivatives_data>, caf::reacts_to<atoms::process_atom>,
                     caf::replies_to<stage_links>::with<atoms::wire_atom>,
                     caf::replies_to<atoms::faults_atom, stage_faults>::with<atoms::faults_atom>,
                     caf::replies_to<atoms::plan_atom, phase_plan>::with<atoms::plan_atom>,
                     caf::replies_to<eval_data>::with<eval_data>,
                     caf::replies_to<atoms::report_atom>::with<stage_report>,
                     caf::replies_to<atoms::status_atom>::with<stage_status>,
                     caf::replies_to<atoms::state_atom>::with<stage_snapshot>,
                     caf::replies_to<atoms::restore_atom, stage_snapshot>::with<atoms::restore_atom>,
                     caf::replies_to<atoms::restore_atom, cut_part>::with<atoms::restore_atom>,
                     caf::replies_to<atoms::restore_atom, stage_report>::with<atoms::restore_atom>,
                     caf::replies_to<atoms::migrate_atom>::with<cut_part>,
                     caf::replies_to<atoms::hold_atom>::with<recovery_order>,
                     caf::replies_to<atoms::recover_atom, recovery_order>::with<atoms::recover_atom>>;

/// A node: a process that hosts stages for a coordinator. spawn_stage → the new stage actor.
/// kill_node: the node process kills itself with SIGKILL (fault injection). ping: the node's trace
/// clock now (µs), to align its timeline; trace: its stages' timeline as trace JSON (output.trace).
/// heartbeat: answered at once, from a thread of the node's own (runtime.heartbeat_timeout); fence:
/// the coordinator declared the node lost: it stops its stages and exits.
using node_actor = caf::typed_actor<
    caf::replies_to<spawn_stage>::with<stage_actor>, caf::reacts_to<kill_node>,
    caf::replies_to<atoms::ping_atom>::with<double>, caf::replies_to<atoms::trace_atom>::with<std::string>,
    caf::replies_to<atoms::heartbeat_atom>::with<atoms::heartbeat_atom>, caf::reacts_to<atoms::fence_atom>>;

}  // namespace petra::messages

namespace petra::messages {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, loader_links& x) {
  return f(caf::meta::type_name("loader_links"), x.first_stage, x.loss, x.credits);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, loss_links& x) {
  return f(caf::meta::type_name("loss_links"), x.last_stage, x.coordinator, x.loader, x.per_epoch,
           x.wave_size, x.last_generation, x.stages);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_links& x) {
  return f(caf::meta::type_name("stage_links"), x.prev, x.next, x.prev_device, x.next_device, x.loss,
           x.loader, x.coordinator, x.count, x.generation, x.prev_generation, x.next_generation);
}

}  // namespace petra::messages

CAF_BEGIN_TYPE_ID_BLOCK(petra_handles, caf::id_block::petra::end)

CAF_ADD_TYPE_ID(petra_handles, (petra::messages::forward_sink))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::backward_sink))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::loss_sink))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::credit_sink))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::derivatives_sink))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::coordinator_actor))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::loss_links))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::loss_actor))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::loader_links))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::loader_actor))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::stage_links))
CAF_ADD_TYPE_ID(petra_handles, (petra::messages::stage_actor))

CAF_END_TYPE_ID_BLOCK(petra_handles)

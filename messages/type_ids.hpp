// Every message type and atom of petra, registered with CAF in one type-ID block so that any
// actor can live in another process (a type missing here is a compile error with
// CAF_ENABLE_TYPE_ID_CHECKS). The actor handles follow in a second block (messages/interfaces.hpp).
#pragma once

#include <caf/type_id.hpp>

#include "messages/serialization.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(petra, caf::first_custom_type_id)

CAF_ADD_TYPE_ID(petra, (petra::tensor))
CAF_ADD_TYPE_ID(petra, (petra::activation))
CAF_ADD_TYPE_ID(petra, (petra::stage_stats))
CAF_ADD_TYPE_ID(petra, (petra::stage_report))
CAF_ADD_TYPE_ID(petra, (petra::named_tensor))
CAF_ADD_TYPE_ID(petra, (petra::stage_snapshot))
CAF_ADD_TYPE_ID(petra, (petra::messages::stamp))
CAF_ADD_TYPE_ID(petra, (petra::messages::forward_data))
CAF_ADD_TYPE_ID(petra, (petra::messages::backward_data))
CAF_ADD_TYPE_ID(petra, (petra::messages::labels_data))
CAF_ADD_TYPE_ID(petra, (petra::messages::logits_data))
CAF_ADD_TYPE_ID(petra, (petra::messages::loss_data))
CAF_ADD_TYPE_ID(petra, (petra::messages::eval_data))
CAF_ADD_TYPE_ID(petra, (petra::messages::credit_return))
CAF_ADD_TYPE_ID(petra, (petra::messages::cut_marker))
CAF_ADD_TYPE_ID(petra, (petra::messages::phase_plan))
CAF_ADD_TYPE_ID(petra, (petra::messages::stage_faults))
CAF_ADD_TYPE_ID(petra, (petra::messages::fault_event))
CAF_ADD_TYPE_ID(petra, (petra::messages::loss_report))
CAF_ADD_TYPE_ID(petra, (petra::messages::failure_report))
CAF_ADD_TYPE_ID(petra, (petra::messages::stage_status))
CAF_ADD_TYPE_ID(petra, (petra::messages::phase_done))
CAF_ADD_TYPE_ID(petra, (petra::messages::window_report))
CAF_ADD_TYPE_ID(petra, (petra::messages::stage_epoch_report))
CAF_ADD_TYPE_ID(petra, (petra::messages::epoch_loss_report))
CAF_ADD_TYPE_ID(petra, (petra::messages::eval_report))
CAF_ADD_TYPE_ID(petra, (petra::messages::cut_part))
CAF_ADD_TYPE_ID(petra, (petra::messages::recovery_order))
CAF_ADD_TYPE_ID(petra, (petra::messages::spawn_stage))
CAF_ADD_TYPE_ID(petra, (petra::messages::kill_node))
CAF_ADD_TYPE_ID(petra, (std::vector<int32_t>))
CAF_ADD_TYPE_ID(petra, (petra::stage_tangent))
CAF_ADD_TYPE_ID(petra, (petra::messages::derivatives_data))

CAF_ADD_ATOM(petra, petra::atoms, wire_atom, "wire")
CAF_ADD_ATOM(petra, petra::atoms, plan_atom, "plan")
CAF_ADD_ATOM(petra, petra::atoms, process_atom, "process")
CAF_ADD_ATOM(petra, petra::atoms, report_atom, "report")
CAF_ADD_ATOM(petra, petra::atoms, status_atom, "status")
CAF_ADD_ATOM(petra, petra::atoms, state_atom, "state")
CAF_ADD_ATOM(petra, petra::atoms, restore_atom, "restore")
CAF_ADD_ATOM(petra, petra::atoms, eval_atom, "eval")
CAF_ADD_ATOM(petra, petra::atoms, faults_atom, "faults")
CAF_ADD_ATOM(petra, petra::atoms, trace_atom, "trace")
CAF_ADD_ATOM(petra, petra::atoms, ping_atom, "ping")
CAF_ADD_ATOM(petra, petra::atoms, hold_atom, "hold")
CAF_ADD_ATOM(petra, petra::atoms, recover_atom, "recover")
CAF_ADD_ATOM(petra, petra::atoms, watch_atom, "watch")
CAF_ADD_ATOM(petra, petra::atoms, news_atom, "news")
CAF_ADD_ATOM(petra, petra::atoms, heartbeat_atom, "heartbeat")
CAF_ADD_ATOM(petra, petra::atoms, fence_atom, "fence")

CAF_END_TYPE_ID_BLOCK(petra)

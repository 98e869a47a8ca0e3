// The message types a node decodes off the wire: the fuzz target picks one by its index, the corpus
// generator writes a sample of each. Those of messages/type_ids.hpp first, then the links of
// messages/interfaces.hpp (the petra_handles block: actor handles, as a node's stage, the loader and
// the loss actor receive them when they are wired), each new type appended at the end so that a
// corpus file's index byte keeps its type. A handle of another node needs BASP's proxy registry,
// which this decoder lacks: such a handle is refused ("no proxy registry") after its node id is read;
// a null handle or one of this process decodes in full.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "messages/interfaces.hpp"
#include "messages/type_ids.hpp"

namespace petra::fuzz {

using wire_types =
    std::tuple<tensor, activation, stage_stats, stage_report, named_tensor, stage_snapshot, messages::stamp,
               messages::forward_data, messages::backward_data, messages::labels_data, messages::logits_data,
               messages::loss_data, messages::eval_data, messages::phase_plan, messages::stage_faults,
               messages::fault_event, messages::loss_report, messages::failure_report, messages::stage_status,
               messages::phase_done, messages::window_report, messages::stage_epoch_report,
               messages::epoch_loss_report, messages::eval_report, messages::cut_part,
               messages::recovery_order, messages::spawn_stage, messages::kill_node, std::vector<int32_t>,
               stage_tangent, messages::derivatives_data, messages::credit_return, messages::cut_marker,
               messages::loss_links, messages::loader_links, messages::stage_links>;

/// Index type_count picks a whole caf::message instead of one type.
inline constexpr std::size_t wire_type_count = std::tuple_size_v<wire_types>;

/// One actor system for the whole process, with petra's message types registered as a node's are.
/// It is never destroyed: an actor system torn down among the static destructors at exit corrupts
/// the heap (free(): corrupted unsorted chunks), and the process ends right after anyway.
inline caf::actor_system& wire_system() {
  struct holder {
    caf::actor_system_config config;
    std::unique_ptr<caf::actor_system> system;
    holder() {
      config.add_message_types<caf::id_block::petra>();
      config.add_message_types<caf::id_block::petra_handles>();
      config.set("scheduler.max-threads", 1);
      system = std::make_unique<caf::actor_system>(config);
    }
  };
  static holder* const instance = std::make_unique<holder>().release();
  return *instance->system;
}

}  // namespace petra::fuzz

// The actor system's configuration: petra's message types registered, the network layer loaded,
// heartbeats on (a hung peer is otherwise never noticed), the scheduler sized to the cores asked for.
#pragma once

#include <caf/actor_system_config.hpp>

namespace petra {

class caf_config : public caf::actor_system_config {
 public:
  explicit caf_config(int scheduler_threads);
};

}  // namespace petra

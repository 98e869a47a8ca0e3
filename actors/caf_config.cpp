// The actor system's configuration.
#include "actors/caf_config.hpp"

#include <caf/io/middleman.hpp>

#include "messages/type_ids.hpp"

namespace petra {

caf_config::caf_config(int scheduler_threads) {
  add_message_types<caf::id_block::petra>();
  load<caf::io::middleman>();
  set("scheduler.max-threads", scheduler_threads);
  set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds(1)});
  set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(10)});
}

}  // namespace petra

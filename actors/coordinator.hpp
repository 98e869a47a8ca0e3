// The actor runtimes (runtime.mode lockstep or async) behind the runtime interface of training/:
// the coordinator builds the pipeline, starts each phase, waits for its end while watching every
// actor, collects the stages' reports, evaluates, snapshots and restores.
#pragma once

#include <memory>

#include "compute/optimizer.hpp"
#include "config/config.hpp"
#include "training/runtime.hpp"
#include "training/training_data.hpp"

namespace petra {

/// Throws config::config_error for a config the actor runtime cannot honour, std::invalid_argument
/// for a device it cannot have, run_failure for a node it cannot reach.
std::unique_ptr<pipeline_runtime> make_actor_runtime(const config::run_config& c, training_data& data,
                                                     const optimizer_settings& optimizer);

}  // namespace petra

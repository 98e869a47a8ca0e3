// The reference simulator behind the runtime interface (runtime.mode: simulate): its stages are
// built exactly as the actor runtimes build theirs (backend and threads per stage).
#pragma once

#include <memory>

#include "compute/optimizer.hpp"
#include "config/config.hpp"
#include "training/runtime.hpp"
#include "training/training_data.hpp"

namespace petra {

/// Throws config::config_error for a config simulate cannot honour (check_runtime_supports).
std::unique_ptr<pipeline_runtime> make_simulate_runtime(const config::run_config& c, training_data& data,
                                                        const optimizer_settings& optimizer);

}  // namespace petra

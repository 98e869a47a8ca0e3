// Which config keys each runtime can honour: a key a runtime cannot honour is refused before
// anything runs or is written, never ignored.
#pragma once

#include "config/config.hpp"

namespace petra {

/// Throws config::config_error naming the first key of `c` that runtime.mode cannot honour and why.
void check_runtime_supports(const config::run_config& c);

/// Whether the actor runtime cuts a running pipeline for snapshots (else it drains where one is
/// due): lockstep without link delays (a message would cross the cut more than a tick ahead);
/// async without delays, jitter or reordering (the markers need each link in order).
bool actors_take_cuts(const config::run_config& c);

}  // namespace petra

// Which config keys each runtime can honour: a key a runtime cannot honour is refused before
// anything runs or is written, never ignored.
#pragma once

#include <string>

#include "config/config.hpp"

namespace petra {

/// Throws config::config_error naming the first key of `c` that runtime.mode cannot honour and why.
void check_runtime_supports(const config::run_config& c);

/// Why runs of `c` cannot migrate a stage (pipeline.migrate, `petra migrate`); "" when they can.
std::string why_not_migrated(const config::run_config& c);

/// The run's config for evaluating its weights on this process's CPU (petra eval): the model and the
/// data as the run had them; every setting that only concerned how training ran (runtime, pacing,
/// credits, placement, nodes, faults, the trace) back to what simulate accepts, so that any run
/// directory petra wrote evaluates. check_runtime_supports(for_evaluation(c)) never throws.
config::run_config for_evaluation(config::run_config c);

/// training.tick_order: backward_first (simulate and lockstep: within a tick, each stage but the
/// last runs its backward, and any optimizer step, before its forward).
bool backward_first(const config::run_config& c);

/// Whether the actor runtime cuts a running pipeline for snapshots (else it drains where one is
/// due): lockstep without link delays (a message would cross the cut more than a tick ahead);
/// async without delays, jitter or reordering (the markers need each link in order); never while
/// pipeline.rebalance moves blocks (it drains there instead).
bool actors_take_cuts(const config::run_config& c);

/// Async pacing (runtime.pacing: stages): stage j of `count` (from 0) starts a training forward only
/// while fewer than this many of its micro-batches await their backward, lockstep's bound 2(J−j)+1
/// (1-based j), so no stage runs further ahead of its backward than in lockstep. 0 = no bound
/// (pacing: loader, lockstep, simulate, backprop).
int64_t async_stage_window(const config::run_config& c, int32_t j, int32_t count);

}  // namespace petra

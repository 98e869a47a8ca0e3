// Keys per runtime.
#include "training/runtime_support.hpp"

#include <algorithm>

#include "training/setup.hpp"
#include "training/tick_schedule.hpp"

namespace petra {
namespace {

template <class List>
bool any_set(const List& list, typename List::value_type none) {
  return std::any_of(list.begin(), list.end(), [&](const auto& v) { return v != none; });
}

[[noreturn]] void refuse(const std::string& key, const config::run_config& c, const std::string& why) {
  throw config::config_error(key + ": runtime.mode " + config::to_string(c.runtime.mode) + " " + why);
}

/// Refuses the first faults key that is set, naming it: for a runtime that injects no faults.
void refuse_any_fault(const config::run_config& c, const std::string& why) {
  const config::faults_config& f = c.faults;
  if (any_set(f.forward_delay, 0)) refuse("faults.forward_delay", c, why);
  if (any_set(f.backward_delay, 0)) refuse("faults.backward_delay", c, why);
  if (any_set(f.jitter_ms, 0)) refuse("faults.jitter_ms", c, why);
  if (any_set(f.drop, 0.0)) refuse("faults.drop", c, why);
  if (any_set(f.duplicate, 0.0)) refuse("faults.duplicate", c, why);
  if (any_set(f.reorder, 0.0)) refuse("faults.reorder", c, why);
  if (any_set(f.slow, 1.0)) refuse("faults.slow", c, why);
  if (any_set(f.crash_at_tick, -1)) refuse("faults.crash_at_tick", c, why);
  if (any_set(f.drop_burst, 0)) refuse("faults.drop_burst", c, why);
  if (!f.kill_node.empty()) refuse("faults.kill_node", c, why);
}

/// Async proves a drained point by the stages' counts: a copy that a fault delayed or duplicated, or
/// a micro-batch a recovery re-issued, would make them disagree (faults.slow only stretches the work).
bool breaks_async_drain(const config::faults_config& f) {
  return any_set(f.forward_delay, 0) || any_set(f.backward_delay, 0) || any_set(f.jitter_ms, 0) ||
         any_set(f.drop, 0.0) || any_set(f.duplicate, 0.0) || any_set(f.reorder, 0.0) ||
         any_set(f.crash_at_tick, -1) || any_set(f.drop_burst, 0) || !f.kill_node.empty();
}

}  // namespace

void check_runtime_supports(const config::run_config& c) {
  const config::faults_config& f = c.faults;
  const auto mode = c.runtime.mode;
  if (c.training.method == config::training_method::forward_gradient &&
      mode != config::runtime_mode::simulate) {
    // Delays, slow stages, lost and doubled messages and crashes are injected (actors/fg_faults.hpp);
    // these are not yet: async's wall-clock jitter and reordering, and killed nodes.
    const std::string why =
        "runs forward_gradient without jitter, reordering or node kills so far (remove the key)";
    if (mode == config::runtime_mode::async && any_set(f.jitter_ms, 0)) refuse("faults.jitter_ms", c, why);
    if (mode == config::runtime_mode::async && any_set(f.reorder, 0.0)) refuse("faults.reorder", c, why);
    if (!f.kill_node.empty()) refuse("faults.kill_node", c, why);
  }
  if (c.training.method == config::training_method::forward_gradient && backward_first(c))
    refuse(
        "training.tick_order", c,
        "runs forward_gradient with forward_first only: a stage's derivatives come back the tick after the "
        "loss, and greedy local learning backpropagates right after its forward");
  if (mode == config::runtime_mode::simulate) {
    const std::string why =
        "cannot inject faults: the simulator has no links, actors or nodes "
        "(use runtime.mode lockstep or async)";
    refuse_any_fault(c, why);
    if (std::any_of(c.pipeline.nodes.begin(), c.pipeline.nodes.end(),
                    [](const std::string& n) { return !n.empty() && n != "local"; }))
      refuse("pipeline.nodes", c, "runs every stage in this process (use runtime.mode lockstep or async)");
    if (!c.pipeline.spare_nodes.empty())
      refuse("pipeline.spare_nodes", c,
             "runs every stage in this process (use runtime.mode lockstep or async)");
    if (c.output.trace)
      refuse("output.trace", c,
             "has no actors to trace (the timeline is the actor runtimes': lockstep or async)");
    if (c.runtime.credits != 0)
      refuse("runtime.credits", c, "follows the tick schedule: credits bound the async runtime only");
  }
  if (mode != config::runtime_mode::simulate && any_set(f.drop_burst, 0)) {
    const auto J = static_cast<int64_t>(stage_sizes(c).size());
    for (std::size_t i = 0; i < f.drop_burst.size(); ++i) {
      const int64_t burst = f.drop_burst[i], j = static_cast<int64_t>(i) + 1;
      if (burst <= 0) continue;
      const std::string entry = "faults.drop_burst: entry " + std::to_string(i) + " (stage " +
                                std::to_string(j) + " of " + std::to_string(J) + ")";
      if (j >= J)
        throw config::config_error(entry +
                                   " names the last stage, which has no link to a next stage "
                                   "(a burst is lost on the link j -> j+1)");
      // Async: the lost micro-batches await their backward at stage j for good. Only once they fill
      // its bound does the pipeline stop, so that the stall is noticed before a snapshot holds them.
      const bool by_stages = c.runtime.pacing == config::async_pacing::stages;
      const int64_t bound = by_stages ? fifo_window(i, static_cast<std::size_t>(J))
                                      : loader_credits(c, static_cast<std::size_t>(J));
      if (mode == config::runtime_mode::async && burst < bound)
        throw config::config_error(
            entry + " is " + std::to_string(burst) + "; in async a burst must fill the " +
            (by_stages ? "stage's pacing bound 2(J - j) + 1 = " : "loader's credits, ") +
            std::to_string(bound) +
            " or more: a shorter one leaves the pipeline running with fewer micro-batches in flight, and the "
            "stall comes at the phase's end, after snapshots that hold the lost ones");
    }
  }
  if (mode != config::runtime_mode::async && c.runtime.pacing != config::async_pacing::stages)
    refuse("runtime.pacing", c,
           "follows the tick schedule, which paces every stage: pacing '" +
               config::to_string(c.runtime.pacing) + "' is the async runtime's");
  if (mode == config::runtime_mode::async && backward_first(c))
    refuse("training.tick_order", c,
           "has no ticks to order: each stage runs a waiting backward before its next forward "
           "(use runtime.mode simulate or lockstep for backward_first)");
  if (c.pipeline.rebalance) {
    if (mode == config::runtime_mode::async && breaks_async_drain(c.faults))
      refuse("pipeline.rebalance", c,
             "does not rebalance with injected faults (faults.* but slow): blocks move where the pipeline "
             "proves drained by the stages' counts, and a delayed or duplicated copy, or a re-issued "
             "micro-batch, may still be on its way there");
    if (c.training.method == config::training_method::forward_gradient)
      throw config::config_error(
          "pipeline.rebalance: training.method forward_gradient is not rebalanced: its auxiliary heads "
          "belong to the stages' outputs, which a move would change");
  }
  if (!c.pipeline.migrate.empty())
    if (const std::string why = why_not_migrated(c); !why.empty())
      throw config::config_error("pipeline.migrate: " + why);
  if (mode == config::runtime_mode::lockstep) {
    const std::string why =
        "counts time in ticks: jitter and reordering are wall-clock faults of the async runtime";
    if (any_set(f.jitter_ms, 0)) refuse("faults.jitter_ms", c, why);
    if (any_set(f.reorder, 0.0)) refuse("faults.reorder", c, why);
  }
}

std::string why_not_migrated(const config::run_config& c) {
  const std::string mode = "runtime.mode " + config::to_string(c.runtime.mode);
  if (c.runtime.mode == config::runtime_mode::simulate)
    return mode + " has no stage actors to move: one thread runs every stage (use runtime.mode lockstep)";
  if (c.runtime.mode == config::runtime_mode::async) {
    if (breaks_async_drain(c.faults))
      return mode +
             " does not migrate with injected faults (faults.*): a delayed or duplicated copy, or a "
             "re-issued micro-batch, may still be on its way at a drained point";
  }
  return "";
}

config::run_config for_evaluation(config::run_config c) {
  const config::runtime_config defaults;
  c.runtime.mode = config::runtime_mode::simulate;
  c.runtime.credits = defaults.credits;
  c.runtime.pacing = defaults.pacing;
  c.pipeline.devices.clear();
  c.pipeline.nodes.clear();
  c.pipeline.spare_nodes.clear();
  c.faults = config::faults_config{};
  c.output.trace = false;
  c.pipeline.rebalance = false;  // the checkpoint's config holds the blocks where training left them
  c.testing.rebalance_moves.clear();
  c.pipeline.migrate.clear();  // placements of the training run: every stage is on this CPU here
  return c;
}

bool backward_first(const config::run_config& c) {
  return c.training.tick_order == config::tick_order::backward_first;
}

bool actors_take_cuts(const config::run_config& c) {
  // Forward gradients hold guesses and tangents no cut records yet: their phases end drained.
  if (c.training.method == config::training_method::forward_gradient) return false;
  if (c.pipeline.rebalance) return false;  // rebalancing drains where snapshots would cut
  const config::faults_config& f = c.faults;
  const bool delays = any_set(f.forward_delay, 0) || any_set(f.backward_delay, 0);
  if (c.runtime.mode == config::runtime_mode::lockstep) return !delays;
  return c.runtime.mode == config::runtime_mode::async && !delays && !any_set(f.jitter_ms, 0) &&
         !any_set(f.reorder, 0.0);
}

int64_t async_stage_window(const config::run_config& c, int32_t j, int32_t count) {
  if (c.runtime.mode != config::runtime_mode::async || c.runtime.pacing != config::async_pacing::stages ||
      c.training.method == config::training_method::backprop)
    return 0;
  return fifo_window(static_cast<std::size_t>(j), static_cast<std::size_t>(count));
}

}  // namespace petra

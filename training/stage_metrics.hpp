// The one report builder: per-stage measurements of a period (merged over the phases of an epoch)
// and what DESIGN.md §1 expects of them, as the JSON of metrics.jsonl.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "compute/pipeline/stage_report.hpp"
#include "config/config.hpp"
#include "training/faults.hpp"

namespace petra {

/// 2(J−1−j): the forward→backward delay, in ticks, of stage j (0-based) of J on DESIGN.md §1's
/// tick schedule, before any injected delay.
int64_t schedule_delay_ticks(std::size_t j, std::size_t J);

/// The optimizer steps a stage's weights move during a forward→backward delay of `delay_ticks`:
/// delay / k, 0 for backprop (exact gradients); −1 when the delay has no fixed value (< 0). The one
/// formula of expected staleness, for the metrics lines and the report alike.
double staleness_steps(config::training_method method, int64_t delay_ticks, int accumulation);

/// The forward→backward delay, in ticks, that stage j (0-based) of J must show under this config
/// in simulate and lockstep: 2(J−1−j) plus the injected link delays on its round trip (lockstep);
/// −1 in async, where the delay is counted in the stage's own forwards and follows no fixed schedule.
int64_t expected_delay_ticks(const config::run_config& c, std::size_t j, std::size_t J);

/// staleness_steps of stage j's expected delay under this config (−1 in async).
double expected_staleness_steps(const config::run_config& c, std::size_t j, std::size_t J);

/// Adds a later period's report of the same stage: counts and histograms add, peaks take the maximum.
void merge(stage_report& total, const stage_report& later);

/// The per-stage JSON of an epoch line (README, "What a run writes").
nlohmann::json stage_json(const stage_report& r, const fault_counts& faults, const config::run_config& c,
                          std::size_t J);

}  // namespace petra

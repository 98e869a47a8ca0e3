// The one report builder: per-stage measurements of a period (merged over the phases of an epoch)
// and what docs/design.md §1 expects of them, as the JSON of metrics.jsonl.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "compute/pipeline/stage_report.hpp"
#include "config/config.hpp"
#include "training/faults.hpp"
#include "training/json_record.hpp"

namespace petra {

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

/// One stage of an epoch line (docs/outputs.md, "What a run writes"). Optional where a reader may find a
/// field absent or null: null expectations in async; the injected faults only when there were any,
/// the inversion error only where it was sampled, the fallback's counts only where it may act.
struct stage_record {
  int stage = 0;  // 1-based
  std::optional<int64_t> expected_delay_ticks;
  std::optional<double> expected_staleness_steps;
  std::map<int64_t, int64_t> delay_ticks, staleness_steps;  // value → backwards
  int64_t forwards = 0, backwards = 0, weight_version = 0;
  std::optional<int64_t> fifo_peak;
  int64_t fifo_peak_bytes = 0, stash_peak_versions = 0, stash_peak_bytes = 0;
  std::optional<int64_t> mailbox_peak;
  double busy_seconds = 0;
  std::optional<double> busy_fraction;  // of the epoch's wall time (actor runtimes; 0 in simulate)
  // Actor runtimes: waiting for input, for a gradient (stage_report's), the rest (message handling,
  // hand-over, between phases), and the waits' share of the wall time.
  std::optional<double> wait_input_seconds, wait_gradient_seconds, other_seconds, idle_fraction;
  int64_t device_bytes = 0;
  std::optional<int64_t> injected_drops, injected_duplicates, injected_reorders, injected_delays,
      injected_slowdowns, injected_crashes, injected_kills, duplicates_discarded;
  std::optional<int64_t> inversion_samples;
  std::optional<double> inversion_error_mean, inversion_error_max;
  // With training.max_inversion_error, at the stages that rebuild: forwards taken keeping their input
  // (the others rebuilt) and the switches between the two modes.
  std::optional<int64_t> fallback_forwards, fallback_switches;
  // runtime.overlap_rebuild in the actor runtimes: backwards whose last block's rebuild began ahead,
  // from the rebuilt output the stage after sent before its gradient (absent when none did).
  std::optional<int64_t> rebuilds_ahead;
  // forward_gradient: cos(ĝ_j, true ∇_{z_j} L), a diagnostic computed by an extra true backward
  std::optional<int64_t> diagnostic_gradient_cosine_samples;
  std::optional<double> diagnostic_gradient_cosine_mean, diagnostic_gradient_cosine_min;
  // forward_gradient in the actor runtimes: messages from downstream (its derivatives) and their bytes.
  std::optional<int64_t> upstream_messages, upstream_bytes;
};

template <class Fields>
void describe(Fields& f, stage_record& s) {
  using json_record::presence;
  f("stage", s.stage);
  f("expected_delay_ticks", s.expected_delay_ticks, presence::optional);
  f("expected_staleness_steps", s.expected_staleness_steps, presence::optional);
  f.counts("delay_ticks", s.delay_ticks, presence::optional);
  f.counts("staleness_steps", s.staleness_steps, presence::optional);
  f("forwards", s.forwards, presence::optional);
  f("backwards", s.backwards, presence::optional);
  f("weight_version", s.weight_version, presence::optional);
  f("fifo_peak", s.fifo_peak, presence::optional);
  f("fifo_peak_bytes", s.fifo_peak_bytes, presence::optional);
  f("stash_peak_versions", s.stash_peak_versions, presence::optional);
  f("stash_peak_bytes", s.stash_peak_bytes, presence::optional);
  f("mailbox_peak", s.mailbox_peak, presence::optional);
  f("busy_seconds", s.busy_seconds, presence::optional);
  f("busy_fraction", s.busy_fraction, presence::optional);
  f("wait_input_seconds", s.wait_input_seconds, presence::omitted);
  f("wait_gradient_seconds", s.wait_gradient_seconds, presence::omitted);
  f("other_seconds", s.other_seconds, presence::omitted);
  f("idle_fraction", s.idle_fraction, presence::omitted);
  f("device_bytes", s.device_bytes, presence::optional);
  f("injected_drops", s.injected_drops, presence::omitted);
  f("injected_duplicates", s.injected_duplicates, presence::omitted);
  f("injected_reorders", s.injected_reorders, presence::omitted);
  f("injected_delays", s.injected_delays, presence::omitted);
  f("injected_slowdowns", s.injected_slowdowns, presence::omitted);
  f("injected_crashes", s.injected_crashes, presence::omitted);
  f("injected_kills", s.injected_kills, presence::omitted);
  f("duplicates_discarded", s.duplicates_discarded, presence::omitted);
  f("inversion_samples", s.inversion_samples, presence::omitted);
  f("inversion_error_mean", s.inversion_error_mean, presence::omitted);
  f("inversion_error_max", s.inversion_error_max, presence::omitted);
  f("fallback_forwards", s.fallback_forwards, presence::omitted);
  f("fallback_switches", s.fallback_switches, presence::omitted);
  f("rebuilds_ahead", s.rebuilds_ahead, presence::omitted);
  f("diagnostic_gradient_cosine_samples", s.diagnostic_gradient_cosine_samples, presence::omitted);
  f("diagnostic_gradient_cosine_mean", s.diagnostic_gradient_cosine_mean, presence::omitted);
  f("diagnostic_gradient_cosine_min", s.diagnostic_gradient_cosine_min, presence::omitted);
  f("upstream_messages", s.upstream_messages, presence::omitted);
  f("upstream_bytes", s.upstream_bytes, presence::omitted);
}

/// The per-stage record of an epoch line.
stage_record stage_line(const stage_report& r, const fault_counts& faults, const config::run_config& c,
                        std::size_t J);

/// The per-stage JSON of an epoch line: stage_line's record.
nlohmann::json stage_json(const stage_report& r, const fault_counts& faults, const config::run_config& c,
                          std::size_t J);

}  // namespace petra

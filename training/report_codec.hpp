// Measurements as JSON and back, exactly: what a snapshot keeps of a stage's record, of the
// epochs still open and of the totals so far, so that a resumed run reports as the uninterrupted one.
// Each record is described once (json_record.hpp); the functions below write and read by it.
#pragma once

#include <nlohmann/json.hpp>

#include "compute/pipeline/stage_report.hpp"
#include "training/json_record.hpp"
#include "training/loss_ledger.hpp"

namespace petra {

template <class Fields>
void describe(Fields& f, stage_stats& s) {
  f("forwards", s.forwards);
  f("backwards", s.backwards);
  f("delay_ticks", s.delay_ticks);
  f("staleness_steps", s.staleness_steps);
  f("fifo_peak", s.fifo_peak);
  f("fifo_peak_bytes", s.fifo_peak_bytes);
  f("stash_peak", s.stash_peak);
  f("stash_peak_bytes", s.stash_peak_bytes);
  f("inversion_samples", s.inversion_samples);
  f("inversion_error_sum", s.inversion_error_sum);
  f("inversion_error_max", s.inversion_error_max);
  f("fallback_forwards", s.fallback_forwards, json_record::presence::optional);  // absent before the fallback
  f("fallback_switches", s.fallback_switches, json_record::presence::optional);
  f("rebuilds_ahead", s.rebuilds_ahead, json_record::presence::optional);  // absent before it existed
}

template <class Fields>
void describe(Fields& f, stage_report& r) {
  f("stage", r.stage);
  f("weight_version", r.weight_version);
  f("stats", r.stats);
  f("mailbox_peak", r.mailbox_peak);
  f("busy_seconds", r.busy_seconds);
  f("wall_seconds", r.wall_seconds);
  f("wait_input_seconds", r.wait_input_seconds, json_record::presence::optional);  // absent before it existed
  f("wait_gradient_seconds", r.wait_gradient_seconds, json_record::presence::optional);
  f("device_bytes", r.device_bytes);
}

nlohmann::json stats_to_json(const stage_stats& s);
/// Throws std::runtime_error naming the field that is missing or of the wrong type.
stage_stats stats_from_json(const nlohmann::json& j);

nlohmann::json totals_to_json(const run_totals& t);
run_totals totals_from_json(const nlohmann::json& j);

}  // namespace petra

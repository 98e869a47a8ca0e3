// Per-stage metrics.
#include "training/stage_metrics.hpp"

#include <algorithm>

#include "training/tick_schedule.hpp"

namespace petra {
namespace {

int64_t entry(const std::vector<int>& list, std::size_t i) { return i < list.size() ? list[i] : 0; }

}  // namespace

double staleness_steps(config::training_method method, int64_t delay_ticks, int accumulation) {
  if (method == config::training_method::backprop) return 0.0;  // one micro-batch in flight
  return delay_ticks < 0 ? -1.0 : static_cast<double>(delay_ticks) / accumulation;
}

int64_t expected_delay_ticks(const config::run_config& c, std::size_t j, std::size_t J) {
  if (c.runtime.mode == config::runtime_mode::async) return -1;
  if (c.training.method == config::training_method::forward_gradient)
    return forward_gradient_ticks(j, J,
                                  c.training.forward_gradient.target == config::gradient_target::local) +
           (c.runtime.mode == config::runtime_mode::lockstep ? forward_gradient_link_delay(c, j, J) : 0);
  int64_t delay = round_trip_ticks(j, J);
  if (c.runtime.mode == config::runtime_mode::lockstep)
    for (std::size_t link = j; link + 1 < J; ++link)
      delay += entry(c.faults.forward_delay, link) + entry(c.faults.backward_delay, link);
  return delay;
}

double expected_staleness_steps(const config::run_config& c, std::size_t j, std::size_t J) {
  return staleness_steps(c.training.method, expected_delay_ticks(c, j, J), c.training.accumulation);
}

void merge(stage_report& total, const stage_report& later) {
  total.stats.add(later.stats);
  total.gradient_cosine_samples += later.gradient_cosine_samples;
  total.gradient_cosine_sum += later.gradient_cosine_sum;
  total.gradient_cosine_min = std::min(total.gradient_cosine_min, later.gradient_cosine_min);
  total.upstream_messages += later.upstream_messages;
  total.upstream_bytes += later.upstream_bytes;
  total.stage = later.stage;
  total.weight_version = later.weight_version;
  total.mailbox_peak = std::max(total.mailbox_peak, later.mailbox_peak);
  total.busy_seconds += later.busy_seconds;
  total.wall_seconds += later.wall_seconds;
  total.wait_input_seconds += later.wait_input_seconds;
  total.wait_gradient_seconds += later.wait_gradient_seconds;
  total.device_bytes = later.device_bytes;
}

stage_record stage_line(const stage_report& r, const fault_counts& faults, const config::run_config& c,
                        std::size_t J) {
  const std::size_t j = static_cast<std::size_t>(r.stage);
  const int64_t delay = expected_delay_ticks(c, j, J);
  const double staleness = expected_staleness_steps(c, j, J);
  const stage_stats& s = r.stats;
  stage_record out;
  out.stage = r.stage + 1;
  if (delay >= 0) out.expected_delay_ticks = delay;
  if (staleness >= 0) out.expected_staleness_steps = staleness;
  out.delay_ticks = s.delay_ticks;
  out.staleness_steps = s.staleness_steps;
  out.forwards = s.forwards;
  out.backwards = s.backwards;
  out.weight_version = r.weight_version;
  out.fifo_peak = static_cast<int64_t>(s.fifo_peak);
  out.fifo_peak_bytes = static_cast<int64_t>(s.fifo_peak_bytes);
  out.stash_peak_versions = static_cast<int64_t>(s.stash_peak);
  out.stash_peak_bytes = static_cast<int64_t>(s.stash_peak_bytes);
  out.mailbox_peak = r.mailbox_peak;
  out.busy_seconds = r.busy_seconds;
  out.busy_fraction = r.wall_seconds > 0 ? r.busy_seconds / r.wall_seconds : 0.0;
  if (r.wall_seconds > 0) {  // actor runtimes: where the rest of the stage's time went
    out.wait_input_seconds = r.wait_input_seconds;
    out.wait_gradient_seconds = r.wait_gradient_seconds;
    out.other_seconds =
        std::max(0.0, r.wall_seconds - r.busy_seconds - r.wait_input_seconds - r.wait_gradient_seconds);
    out.idle_fraction = (r.wait_input_seconds + r.wait_gradient_seconds) / r.wall_seconds;
  }
  out.device_bytes = r.device_bytes;
  if (faults.injected() > 0 || faults.duplicates_discarded > 0) {
    out.injected_drops = faults.drops;
    out.injected_duplicates = faults.duplicates;
    out.injected_reorders = faults.reorders;
    out.injected_delays = faults.delays;
    out.injected_slowdowns = faults.slowed;
    out.injected_crashes = faults.crashes;
    out.injected_kills = faults.kills;
    out.duplicates_discarded = faults.duplicates_discarded;
  }
  if (s.inversion_samples > 0) {
    out.inversion_samples = s.inversion_samples;
    out.inversion_error_mean = s.inversion_error_sum / static_cast<double>(s.inversion_samples);
    out.inversion_error_max = s.inversion_error_max;
  }
  // A stage that rebuilds samples its error; a kept forward or a switch shows one that fell back.
  if (c.training.max_inversion_error > 0 &&
      (s.inversion_samples > 0 || s.fallback_forwards > 0 || s.fallback_switches > 0)) {
    out.fallback_forwards = s.fallback_forwards;
    out.fallback_switches = s.fallback_switches;
  }
  if (s.rebuilds_ahead > 0) out.rebuilds_ahead = s.rebuilds_ahead;
  if (r.gradient_cosine_samples > 0) {
    out.diagnostic_gradient_cosine_samples = r.gradient_cosine_samples;
    out.diagnostic_gradient_cosine_mean =
        r.gradient_cosine_sum / static_cast<double>(r.gradient_cosine_samples);
    out.diagnostic_gradient_cosine_min = r.gradient_cosine_min;
  }
  if (c.training.method == config::training_method::forward_gradient &&
      c.runtime.mode != config::runtime_mode::simulate) {  // the actor runtimes count what comes back
    out.upstream_messages = r.upstream_messages;
    out.upstream_bytes = r.upstream_bytes;
  }
  return out;
}

nlohmann::json stage_json(const stage_report& r, const fault_counts& faults, const config::run_config& c,
                          std::size_t J) {
  return json_record::write(stage_line(r, faults, c, J));
}

}  // namespace petra

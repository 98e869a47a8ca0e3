// Stage measurements as JSON.
#include "actors/stage_report_json.hpp"

namespace petra {

nlohmann::json to_json(const messages::stage_report& r, std::size_t stage_count) {
  auto histogram = [](const std::vector<messages::bucket>& buckets) {
    nlohmann::json h = nlohmann::json::object();
    for (const auto& b : buckets) h[std::to_string(b.value)] = b.count;
    return h;
  };
  nlohmann::json s = {{"stage", r.stage + 1},
                      {"expected_delay_ticks", 2 * (static_cast<int64_t>(stage_count) - 1 - r.stage)},
                      {"delay_ticks", histogram(r.delay_ticks)},
                      {"staleness_steps", histogram(r.staleness_steps)},
                      {"forwards", r.forwards},
                      {"backwards", r.backwards},
                      {"weight_version", r.weight_version},
                      {"fifo_peak", r.fifo_peak},
                      {"fifo_peak_bytes", r.fifo_peak_bytes},
                      {"stash_peak_versions", r.stash_peak},
                      {"stash_peak_bytes", r.stash_peak_bytes},
                      {"mailbox_peak", r.mailbox_peak},
                      {"busy_seconds", r.busy_seconds},
                      {"busy_fraction", r.wall_seconds > 0 ? r.busy_seconds / r.wall_seconds : 0.0}};
  const int64_t injected = r.injected_drops + r.injected_duplicates + r.injected_reorders + r.injected_delays +
                           r.injected_crashes;
  if (injected > 0 || r.duplicates_discarded > 0) {
    s["injected_drops"] = r.injected_drops;
    s["injected_duplicates"] = r.injected_duplicates;
    s["injected_reorders"] = r.injected_reorders;
    s["injected_delays"] = r.injected_delays;
    s["injected_crashes"] = r.injected_crashes;
    s["duplicates_discarded"] = r.duplicates_discarded;
  }
  if (r.inversion_samples > 0) {
    s["inversion_samples"] = r.inversion_samples;
    s["inversion_error_mean"] = r.inversion_error_sum / static_cast<double>(r.inversion_samples);
    s["inversion_error_max"] = r.inversion_error_max;
  }
  return s;
}

}  // namespace petra

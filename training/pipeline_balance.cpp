// The pipeline's balance from an epoch's stage records.
#include "training/pipeline_balance.hpp"

#include <cstdio>
#include <string>

namespace petra {

std::optional<pipeline_balance> balance_of(const std::vector<stage_record>& stages, double images,
                                           double images_per_s, const stage_cores_use& use) {
  pipeline_balance b;
  double busiest = 0, total = 0, thread_seconds = 0;
  int cpu_stages = 0;
  for (const stage_record& s : stages) {
    total += s.busy_seconds;
    if (s.busy_seconds > busiest) {
      busiest = s.busy_seconds;
      b.busiest_stage = s.stage;
      b.busiest_fraction = s.busy_fraction.value_or(0);
    }
    const auto j = static_cast<std::size_t>(s.stage - 1);
    if (s.stage >= 1 && j < use.threads.size() && use.threads[j] > 0) {
      thread_seconds += s.busy_seconds * use.threads[j];
      ++cpu_stages;
    }
  }
  if (!(busiest > 0) || !(images > 0)) return std::nullopt;
  b.ideal_images_per_s = images / busiest;
  b.efficiency = images_per_s / b.ideal_images_per_s;
  b.compute_over_busiest = total / busiest;
  // The cores run at most `cores` threads at once: the stages' thread-seconds take at least their
  // sum over the cores, however the stages take turns.
  if (use.cores > 0 && thread_seconds / use.cores > busiest) {
    b.cpu_stages = cpu_stages;
    b.cores = use.cores;
    b.cores_ideal_images_per_s = images / (thread_seconds / use.cores);
    b.cores_efficiency = images_per_s / b.cores_ideal_images_per_s;
  }
  return b;
}

std::string balance_text(const pipeline_balance& b) {
  char text[256];
  std::snprintf(
      text, sizeof text,
      "pipeline: busiest stage %d (busy %.0f %%): ideal %.0f img/s, efficiency %.0f %%; the stages' "
      "compute is %.1f × the busiest's",
      b.busiest_stage, 100 * b.busiest_fraction, b.ideal_images_per_s, 100 * b.efficiency,
      b.compute_over_busiest);
  std::string line = text;
  if (b.cores > 0) {
    std::snprintf(text, sizeof text,
                  "; %d CPU stage%s on %d core%s: their compute allows %.0f img/s, efficiency %.0f %%",
                  b.cpu_stages, b.cpu_stages == 1 ? "" : "s", b.cores, b.cores == 1 ? "" : "s",
                  b.cores_ideal_images_per_s, 100 * b.cores_efficiency);
    line += text;
  }
  return line;
}

}  // namespace petra

// The pipeline's balance from an epoch's stage records.
#include "training/pipeline_balance.hpp"

#include <cstdio>

namespace petra {

std::optional<pipeline_balance> balance_of(const std::vector<stage_record>& stages, double images,
                                           double images_per_s) {
  pipeline_balance b;
  double busiest = 0, total = 0;
  for (const stage_record& s : stages) {
    total += s.busy_seconds;
    if (s.busy_seconds > busiest) {
      busiest = s.busy_seconds;
      b.busiest_stage = s.stage;
      b.busiest_fraction = s.busy_fraction.value_or(0);
    }
  }
  if (!(busiest > 0) || !(images > 0)) return std::nullopt;
  b.ideal_images_per_s = images / busiest;
  b.efficiency = images_per_s / b.ideal_images_per_s;
  b.compute_over_busiest = total / busiest;
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
  return text;
}

}  // namespace petra

// Windows of a stage's statistics.
#include "training/stage_window.hpp"

namespace petra {

stage_window stage_window_meter::take(const stage& s) {
  const stage_stats& st = s.stats();
  totals now;
  for (const auto& [steps, count] : st.staleness_steps)
    now.staleness_sum += steps * count, now.staleness_count += count;
  now.inversion_samples = st.inversion_samples;
  now.inversion_sum = st.inversion_error_sum;
  stage_window w;
  w.stage = static_cast<int32_t>(s.index());
  w.optimizer_steps = s.weight_version();
  const int64_t count = now.staleness_count - last_.staleness_count;
  if (count > 0) w.staleness_mean = static_cast<double>(now.staleness_sum - last_.staleness_sum) / count;
  const int64_t samples = now.inversion_samples - last_.inversion_samples;
  if (samples > 0)
    w.inversion_error_mean = (now.inversion_sum - last_.inversion_sum) / static_cast<double>(samples);
  last_ = now;
  return w;
}

}  // namespace petra

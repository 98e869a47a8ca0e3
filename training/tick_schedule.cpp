// The shared tick arithmetic.
#include "training/tick_schedule.hpp"

#include "training/setup.hpp"

namespace petra {

int64_t round_trip_ticks(std::size_t j, std::size_t J) { return 2 * static_cast<int64_t>(J - 1 - j); }

int64_t fifo_window(std::size_t j, std::size_t J) { return round_trip_ticks(j, J) + 1; }

int64_t forward_gradient_ticks(std::size_t j, std::size_t J, bool local_target) {
  return local_target || j + 1 == J ? 0 : static_cast<int64_t>(J - j);
}

int64_t forward_gradient_link_delay(const config::run_config& c, std::size_t j, std::size_t J) {
  if (c.training.forward_gradient.target == config::gradient_target::local || j + 1 >= J) return 0;
  const auto entry = [](const std::vector<int>& list, std::size_t i) -> int64_t {
    return i < list.size() ? list[i] : 0;
  };
  int64_t sum = entry(c.faults.backward_delay, j);
  for (std::size_t link = j; link + 1 < J; ++link) sum += entry(c.faults.forward_delay, link);
  return sum;
}

int64_t entry_spacing(method_kind kind, std::size_t J) {
  return kind == method_kind::backprop ? 2 * static_cast<int64_t>(J) - 1 : 1;
}

int64_t link_delay_ticks(const config::run_config& c) {
  const std::size_t J = stage_sizes(c).size();
  int64_t sum = 0;
  for (std::size_t link = 0; link + 1 < J; ++link) {
    if (link < c.faults.forward_delay.size()) sum += c.faults.forward_delay[link];
    if (link < c.faults.backward_delay.size()) sum += c.faults.backward_delay[link];
  }
  return sum;
}

int64_t pipeline_entry_spacing(const config::run_config& c, int64_t link_delays) {
  const method_kind kind = method_for(c.training).kind;
  return entry_spacing(kind, stage_sizes(c).size()) + (kind == method_kind::backprop ? link_delays : 0);
}

int64_t loader_credits(const config::run_config& c, std::size_t J) {
  if (c.training.method == config::training_method::backprop) return 1;
  if (c.runtime.credits > 0) return c.runtime.credits;
  return fifo_window(0, J);
}

}  // namespace petra

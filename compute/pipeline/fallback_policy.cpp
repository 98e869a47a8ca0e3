// The fallback's hysteresis over a window of sampled inversion errors.
#include "compute/pipeline/fallback_policy.hpp"

#include <stdexcept>
#include <string>

namespace petra {

fallback_policy::fallback_policy(double max_error) : max_error_(max_error) {
  if (!(max_error >= 0))
    throw std::invalid_argument("fallback: the largest inversion error must be 0 (off) or positive");
}

bool fallback_policy::observe(double error) {
  if (!enabled()) return false;
  std::vector<double>& w = state_.window;
  if (w.size() == window) w.erase(w.begin());
  w.push_back(error);
  if (w.size() < window) return false;
  double sum = 0;
  for (double e : w) sum += e;  // in sample order: the same bits in every runtime
  const double mean = sum / static_cast<double>(window);
  // Written so that NaN (a diverged rebuild) enters the fallback and never leaves it.
  const bool flip = state_.keeping ? mean < max_error_ / 2 : !(mean <= max_error_);
  if (!flip) return false;
  state_.keeping = !state_.keeping;
  w.clear();
  return true;
}

void fallback_policy::restore(const fallback_state& state) {
  if (state.window.size() > window)
    throw std::invalid_argument("fallback: a saved window holds " + std::to_string(state.window.size()) +
                                " samples, at most " + std::to_string(window) + " are kept");
  state_ = state;
}

}  // namespace petra

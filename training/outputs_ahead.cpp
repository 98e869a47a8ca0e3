// Rebuilt outputs sent ahead: kept until their backward is next.
#include "training/outputs_ahead.hpp"

#include <algorithm>
#include <vector>

namespace petra {

void outputs_ahead::start_next(stage& s, const std::function<activation(const activation&)>& take_in) {
  if (kept_.empty()) return;
  const std::vector<int64_t> waiting = s.outstanding_ids();
  for (auto it = kept_.begin(); it != kept_.end();)
    if (std::find(waiting.begin(), waiting.end(), it->first) == waiting.end())
      it = kept_.erase(it);
    else
      ++it;
  const auto next = kept_.find(s.next_backward_id());
  if (next == kept_.end()) return;
  s.rebuild_ahead(take_in(next->second), next->first);
  kept_.erase(next);
}

}  // namespace petra

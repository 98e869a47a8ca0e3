// A stage's marks of its phase's recoveries.
#include "training/recovery_marks.hpp"

namespace petra {

void recovery_marks::restart() {
  drop_upto = abandoned_cuts = -1;
  quiet_forward_below = quiet_backward_below = -1;
  cancelled.clear();
  coming_again.clear();
  readmitted.clear();
  reissue_tick.clear();
}

bool recovery_marks::readmit(int64_t id) {
  if (coming_again.erase(id) == 0) return false;
  readmitted.insert(id);
  return true;
}

}  // namespace petra

// Images per second over a measured time.
#include "training/throughput.hpp"

#include <algorithm>

namespace petra {

int64_t timed_epoch_images(int epoch, int64_t per_epoch, int micro_batch, int64_t samples,
                           int64_t timed_from) {
  const int64_t epoch_start = (static_cast<int64_t>(epoch) - 1) * per_epoch;
  const int64_t before = std::clamp<int64_t>(timed_from - epoch_start, 0, per_epoch);  // not in the time
  // Only an epoch's last micro-batch may be short: the ones before the clock started are whole.
  return std::max<int64_t>(0, samples - before * micro_batch);
}

}  // namespace petra

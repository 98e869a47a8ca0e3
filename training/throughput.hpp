// Images per second over a measured time: only the images trained in it count. A resumed process,
// or an attempt after a rollback, measures from where it started, not from the epoch's or the run's
// beginning, while an epoch's (or phase's) totals carry the micro-batches trained before.
#pragma once

#include <cstdint>

namespace petra {

/// The images of epoch `epoch` (1-based, `per_epoch` micro-batches of `micro_batch` images, `samples`
/// images in all) that stage 1 finished in a time measured from micro-batch `timed_from` of the run
/// (its completed count when the clock started, counted from epoch 1's first): those of the epoch's
/// micro-batches from there on (all of them when the clock started before the epoch).
int64_t timed_epoch_images(int epoch, int64_t per_epoch, int micro_batch, int64_t samples,
                           int64_t timed_from);

/// `images` over `seconds`; 0 for no time.
inline double images_per_second(int64_t images, double seconds) {
  return seconds > 0 ? static_cast<double>(images) / seconds : 0.0;
}

}  // namespace petra

// The evaluation loop.
#include "training/evaluate.hpp"

namespace petra {

eval_result evaluate(data_feed& feed, const std::function<eval_score(const micro_batch&)>& score) {
  feed.start_epoch(0);
  eval_sums sums;
  micro_batch mb;
  while (feed.next(mb)) {
    const eval_score s = score(mb);
    sums.add(s.mean_loss, s.correct, static_cast<int64_t>(mb.labels.size()));
  }
  return sums.result();
}

void calibrate(data_feed& feed, int64_t micro_batches,
               const std::function<void(const micro_batch&)>& calibrate) {
  feed.start_epoch(0);
  micro_batch mb;
  for (int64_t i = 0; i < micro_batches && feed.next(mb); ++i) calibrate(mb);
}

}  // namespace petra

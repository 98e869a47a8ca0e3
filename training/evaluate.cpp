// The evaluation loop.
#include "training/evaluate.hpp"

namespace petra {

eval_result evaluate(data_feed& feed, const std::function<eval_score(const micro_batch&)>& score) {
  feed.start_epoch(0);
  eval_result r;
  double loss_sum = 0;
  int64_t correct = 0;
  micro_batch mb;
  while (feed.next(mb)) {
    const eval_score s = score(mb);
    const auto n = static_cast<int64_t>(mb.labels.size());
    loss_sum += s.mean_loss * static_cast<double>(n);
    correct += s.correct;
    r.samples += n;
  }
  if (r.samples) {
    r.loss = loss_sum / static_cast<double>(r.samples);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(r.samples);
  }
  return r;
}

}  // namespace petra

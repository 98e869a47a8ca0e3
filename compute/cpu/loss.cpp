// Softmax cross-entropy of logits (N,K) against integer labels, its gradient and hits.
#include <cmath>

#include "compute/cpu/cpu_backend.hpp"

namespace petra {

float cpu_backend::softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels,
                                              tensor* dlogits, int64_t* correct) {
  const int64_t n = logits.dim(0), classes = logits.dim(1);

  if (dlogits) *dlogits = output(logits.shape());
  double loss = 0;
  int64_t hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.data() + i * classes;
    int64_t best = 0;
    for (int64_t j = 1; j < classes; ++j)
      if (row[j] > row[best]) best = j;
    const double top = row[best];  // subtracting the max keeps exp() ≤ 1
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) sum += std::exp(row[j] - top);
    const double log_sum = std::log(sum);
    loss += log_sum - (row[labels[i]] - top);
    hits += best == labels[i];
    if (dlogits) {
      float* grad = dlogits->data() + i * classes;
      for (int64_t j = 0; j < classes; ++j)
        grad[j] = static_cast<float>((std::exp(row[j] - top - log_sum) - (j == labels[i])) / n);
    }
  }
  if (correct) *correct = hits;
  return static_cast<float>(loss / n);
}

}  // namespace petra

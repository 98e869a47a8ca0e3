// Softmax cross-entropy on the GPU: per-row losses and hits by a kernel, summed on the host in
// row order (double), as the CPU twin. Returning the loss waits for the stream.
#include <cstring>
#include <vector>

#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

float cuda_backend::softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels,
                                               tensor* dlogits, int64_t* correct) {
  const int64_t n = logits.dim(0), classes = logits.dim(1);
  enter();
  const auto rows = static_cast<std::size_t>(n);
  // One scratch block: labels (int32), then per-row losses (double, 8-aligned), then hits (int32).
  const std::size_t loss_offset = ((rows * sizeof(int32_t) + 7) / 8) * 8;
  const std::size_t hit_offset = loss_offset + rows * sizeof(double);
  const std::shared_ptr<storage> scratch = context_->allocate(hit_offset + rows * sizeof(int32_t));
  char* base = static_cast<char*>(scratch->data());
  auto* device_labels = reinterpret_cast<int32_t*>(base);
  auto* row_loss = reinterpret_cast<double*>(base + loss_offset);
  auto* row_hit = reinterpret_cast<int32_t*>(base + hit_offset);
  // Labels in and per-row results out go through pinned memory: asynchronous copies, no staging
  // by the driver. The loss is a scalar the caller needs now: the host waits for the stream.
  tensor labels_in = context_->pinned({n});  // int32 labels in float-sized slots
  std::memcpy(labels_in.data(), labels.data(), rows * sizeof(int32_t));
  PETRA_CUDA_CHECK(cudaMemcpyAsync(device_labels, labels_in.data(), rows * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, stream()));
  if (dlogits) *dlogits = output(logits.shape());
  cuda::kernels::softmax_cross_entropy(logits.data(), device_labels, n, classes,
                                       dlogits ? dlogits->data() : nullptr, row_loss, row_hit, stream());
  tensor results = context_->pinned({3 * n});  // per-row losses (double), then hits (int32)
  auto* losses = reinterpret_cast<double*>(results.data());
  auto* hits = reinterpret_cast<int32_t*>(losses + rows);
  PETRA_CUDA_CHECK(
      cudaMemcpyAsync(losses, row_loss, rows * sizeof(double), cudaMemcpyDeviceToHost, stream()));
  PETRA_CUDA_CHECK(cudaMemcpyAsync(hits, row_hit, rows * sizeof(int32_t), cudaMemcpyDeviceToHost, stream()));
  context_->synchronize();
  double loss = 0;
  int64_t total_hits = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    loss += losses[i];
    total_hits += hits[i];
  }
  if (correct) *correct = total_hits;
  return static_cast<float>(loss / n);
}

}  // namespace petra

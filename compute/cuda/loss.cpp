// Softmax cross-entropy on the GPU: per-row losses and hits by a kernel, then summed on the device
// by one thread in row order (double), the order the CPU twin sums in, so the mean has the CPU
// path's bits for these rows. The sums reach pinned host memory by an asynchronous copy; only
// reading them (deferred_loss::get, or the synchronous op) waits, and only for that copy.
#include <cstring>
#include <vector>

#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/device_context.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

namespace {

/// The device's totals on their way to pinned memory: [double sum][int64 hits].
class gpu_loss final : public deferred_loss::state {
 public:
  gpu_loss(int device, tensor totals) : device_(device), totals_(std::move(totals)), copied_(device) {}
  gpu_loss(const gpu_loss&) = delete;
  gpu_loss& operator=(const gpu_loss&) = delete;
  ~gpu_loss() override {
    // The copy writes totals_: it must have landed before the pinned block goes back to its pool.
    if (!read_) {
      cuda::scoped_device on(device_);
      cudaEventSynchronize(copied_.get());
    }
  }

  void queue_copy(const void* device_totals, cudaStream_t stream) {
    PETRA_CUDA_CHECK(
        cudaMemcpyAsync(totals_.data(), device_totals, 2 * sizeof(double), cudaMemcpyDeviceToHost, stream));
    copied_.record(stream);
  }

  void wait() override {
    if (read_) return;
    copied_.wait();
    const char* bytes = static_cast<const char*>(static_cast<const void*>(totals_.data()));
    std::memcpy(&sum, bytes, sizeof(double));
    std::memcpy(&hits, bytes + sizeof(double), sizeof(int64_t));
    read_ = true;
  }

 private:
  int device_;
  tensor totals_;  // pinned
  cuda::event_handle copied_;
  bool read_ = false;
};

}  // namespace

deferred_loss cuda_backend::softmax_cross_entropy_deferred_impl(const tensor& logits,
                                                                const std::vector<int32_t>& labels,
                                                                tensor* dlogits) {
  const int64_t n = logits.dim(0), classes = logits.dim(1);
  enter();
  const auto rows = static_cast<std::size_t>(n);
  // One scratch block: labels (int32), then per-row losses (double, 8-aligned), the totals (a
  // double and an int64), then hits (int32).
  const std::size_t loss_offset = ((rows * sizeof(int32_t) + 7) / 8) * 8;
  const std::size_t totals_offset = loss_offset + rows * sizeof(double);
  const std::size_t hit_offset = totals_offset + 2 * sizeof(double);
  const std::shared_ptr<storage> scratch = context_->allocate(hit_offset + rows * sizeof(int32_t));
  char* base = static_cast<char*>(scratch->data());
  auto* device_labels = reinterpret_cast<int32_t*>(base);
  auto* row_loss = reinterpret_cast<double*>(base + loss_offset);
  auto* totals = reinterpret_cast<double*>(base + totals_offset);
  auto* row_hit = reinterpret_cast<int32_t*>(base + hit_offset);
  // Labels in through pinned memory, kept until their copy has run (the host does not wait).
  tensor labels_in = context_->pinned({n});  // int32 labels in float-sized slots
  std::memcpy(labels_in.data(), labels.data(), rows * sizeof(int32_t));
  PETRA_CUDA_CHECK(cudaMemcpyAsync(device_labels, labels_in.data(), rows * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, stream()));
  context_->track_upload(std::move(labels_in));
  if (dlogits) *dlogits = output(logits.shape());
  cuda::kernels::softmax_cross_entropy(logits.data(), device_labels, n, classes,
                                       dlogits ? dlogits->data() : nullptr, row_loss, row_hit, stream());
  cuda::kernels::loss_totals(row_loss, row_hit, n, totals, reinterpret_cast<int64_t*>(totals + 1), stream());
  auto pending = std::make_shared<gpu_loss>(index_, context_->pinned({4}));  // 16 bytes
  pending->rows = n;
  pending->queue_copy(totals, stream());
  return deferred_loss(pending);  // the scratch is freed in stream order, after the copy
}

float cuda_backend::softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels,
                                               tensor* dlogits, int64_t* correct) {
  return softmax_cross_entropy_deferred_impl(logits, labels, dlogits).get(correct);
}

}  // namespace petra

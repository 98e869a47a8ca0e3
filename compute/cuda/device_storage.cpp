// Stream-ordered GPU memory: allocation, imports, the ready event, and the ordered free.
#include "compute/cuda/device_storage.hpp"

#include "compute/cuda/checks.hpp"

namespace petra::cuda {

namespace {

/// Makes `owner` wait for what `user` has queued so far; false when an event could not be made
/// (the caller then lets the host wait instead). Never throws: runs in a destructor.
bool order_after(scoped_device& on, const stream_handle& owner, const stream_handle& user) {
  on.to(user.device());
  cudaEvent_t e = nullptr;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return false;
  bool ok = cudaEventRecord(e, user.get()) == cudaSuccess;
  on.to(owner.device());
  ok = ok && cudaStreamWaitEvent(owner.get(), e, 0) == cudaSuccess;
  cudaEventDestroy(e);  // released once the wait has passed it
  return ok;
}

}  // namespace

device_storage::device_storage(void* data, std::size_t bytes, std::shared_ptr<stream_handle> owner,
                               bool pooled)
    : storage(data, bytes, device{device_type::cuda, owner->device()}, nullptr),
      owner_(std::move(owner)),
      pooled_(pooled) {}

device_storage::~device_storage() {
  // The last handle may go on any thread with any current device; nothing here may throw, so a
  // failed call is dropped (e.g. the runtime already unloading at exit) after the safe fallback.
  scoped_device on(owner_->device());
  if (data()) {
    for (const auto& user : users_)
      if (!order_after(on, *owner_, *user)) {
        on.to(user->device());
        cudaStreamSynchronize(user->get());
      }
    on.to(owner_->device());
    if (pooled_) {
      cudaFreeAsync(data(), owner_->get());
    } else {
      cudaStreamSynchronize(owner_->get());
      cudaFree(data());
    }
  }
  if (ready_) cudaEventDestroy(ready_);
}

bool device_storage::usable_by(const stream_handle& s) const {
  if (&s == owner_.get()) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& user : users_)
    if (user.get() == &s) return true;
  return false;
}

void device_storage::add_user(std::shared_ptr<stream_handle> user) {
  if (user == owner_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& known : users_)
    if (known == user) return;
  users_.push_back(std::move(user));
}

void device_storage::record_ready(const stream_handle& s) {
  std::lock_guard<std::mutex> lock(mutex_);
  use_device(s.device());
  if (!ready_) PETRA_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  // A re-export records again: a consumer waits on the latest point, which is after the values.
  PETRA_CUDA_CHECK(cudaEventRecord(ready_, s.get()));
}

bool device_storage::wait_ready(cudaStream_t waiter) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ready_) return false;
  PETRA_CUDA_CHECK(cudaStreamWaitEvent(waiter, ready_, 0));
  return true;
}

std::shared_ptr<device_storage> allocate_device(std::size_t bytes,
                                                const std::shared_ptr<stream_handle>& owner, bool pooled) {
  use_device(owner->device());
  void* data = nullptr;
  if (bytes) {
    if (pooled)
      PETRA_CUDA_CHECK(cudaMallocAsync(&data, bytes, owner->get()));
    else
      PETRA_CUDA_CHECK(cudaMalloc(&data, bytes));
  }
  try {
    return std::make_shared<device_storage>(data, bytes, owner, pooled);
  } catch (...) {
    if (data) pooled ? cudaFreeAsync(data, owner->get()) : cudaFree(data);
    throw;
  }
}

}  // namespace petra::cuda

// Streams, events and the current device.
#include "compute/cuda/streams.hpp"

#include "compute/cuda/checks.hpp"

namespace petra::cuda {

void use_device(int index) {
  int current = -1;
  PETRA_CUDA_CHECK(cudaGetDevice(&current));
  if (current != index) PETRA_CUDA_CHECK(cudaSetDevice(index));
}

scoped_device::scoped_device(int index) noexcept {
  if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
  current_ = previous_;
  to(index);
}

void scoped_device::to(int index) noexcept {
  if (current_ != index && cudaSetDevice(index) == cudaSuccess) current_ = index;
}

scoped_device::~scoped_device() {
  if (previous_ >= 0 && current_ != previous_) cudaSetDevice(previous_);
  cudaGetLastError();  // a failure here must not surface in the caller's next check
}

stream_handle::stream_handle(int device) : device_(device) {
  use_device(device);
  PETRA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

stream_handle::~stream_handle() {
  scoped_device on(device_);
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
}

event_handle::event_handle(int device) {
  use_device(device);
  PETRA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

event_handle::~event_handle() {
  // Destroying an event whose recorded work is still queued is allowed: CUDA releases it later.
  if (event_) cudaEventDestroy(event_);
}

event_handle& event_handle::operator=(event_handle&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(event_);
    event_ = other.event_;
    other.event_ = nullptr;
  }
  return *this;
}

void event_handle::record(cudaStream_t stream) { PETRA_CUDA_CHECK(cudaEventRecord(event_, stream)); }

bool event_handle::done() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();  // "not yet" is an answer, not an error for the next launch check to find
    return false;
  }
  PETRA_CUDA_CHECK(status);
  return true;
}

void event_handle::wait() const { PETRA_CUDA_CHECK(cudaEventSynchronize(event_)); }

}  // namespace petra::cuda

// Streams and events of the CUDA backend, as RAII handles: a non-blocking stream shared by its
// backend and by the memory that must be freed in its order, events, and the current device.
#pragma once

#include <cuda_runtime_api.h>

namespace petra::cuda {

/// Makes GPU `index` the calling thread's current device when it is not already (stage
/// actors may run a backend on any thread of the scheduler); throws on failure.
void use_device(int index);

/// In destructors and deleters (never throws): makes `index` current, and restores the thread's
/// previous device at scope exit.
class scoped_device {
 public:
  explicit scoped_device(int index) noexcept;
  ~scoped_device();
  scoped_device(const scoped_device&) = delete;
  scoped_device& operator=(const scoped_device&) = delete;
  /// Switches to `index` within the scope (the previous device is still restored at exit).
  void to(int index) noexcept;

 private:
  int previous_ = -1;
  int current_ = -1;
};

/// A stream created with cudaStreamNonBlocking (no implicit order with the legacy default stream,
/// which nothing in petra uses). Destroyed after it has drained.
class stream_handle {
 public:
  explicit stream_handle(int device);
  ~stream_handle();
  stream_handle(const stream_handle&) = delete;
  stream_handle& operator=(const stream_handle&) = delete;

  int device() const { return device_; }
  cudaStream_t get() const { return stream_; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

/// An event without timing, created on `device` (the device of the streams that record it).
class event_handle {
 public:
  explicit event_handle(int device);
  ~event_handle();
  event_handle(event_handle&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }
  event_handle& operator=(event_handle&& other) noexcept;
  event_handle(const event_handle&) = delete;
  event_handle& operator=(const event_handle&) = delete;

  cudaEvent_t get() const { return event_; }
  /// Records the point `stream` has reached (a stream of this event's device).
  void record(cudaStream_t stream);
  /// True once the recorded work has run.
  bool done() const;
  /// The host waits for the recorded work (only that).
  void wait() const;

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace petra::cuda

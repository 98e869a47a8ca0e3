// One simulated device `sim:N`: a worker thread that runs the queued work of every stream on the
// device, each stream in its order, the streams interleaved round-robin, with events between them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace petra::sim {

/// Wakes a worker: its lock, and the conditions its worker and the host waiters sleep on. Shared
/// so that an event of another device can wake this one whatever outlives what.
struct wake_signal {
  std::mutex mutex;
  std::condition_variable work;  // the worker: new work, an event completed, a hold released, stop
  std::condition_variable done;  // host threads waiting for a stream to reach a point
};

/// A point in one stream's order, complete once the worker has run everything queued before it.
class event {
 public:
  bool complete() const;
  /// Registers `wake` to run when the event completes; false (and `wake` dropped, not run) when it
  /// is complete already, so that a caller holding a lock `wake` takes cannot deadlock on itself.
  bool on_complete(std::function<void()> wake);
  void mark_complete();

 private:
  mutable std::mutex mutex_;
  bool complete_ = false;
  std::vector<std::function<void()>> waiters_;
};

/// Live bytes of the tensors of one device (each sim tensor counts itself in and out).
struct memory_counter {
  std::atomic<int64_t> bytes{0};
};

class device_worker;

/// One backend's queue on a device. Work runs in the order it was queued; the first op that
/// throws fails the stream: later work is skipped and every later call on it reports the error.
class stream {
 public:
  stream(uint64_t id, int latency_us) : id_(id), latency_us_(latency_us) {}
  uint64_t id() const { return id_; }

 private:
  friend class device_worker;
  struct entry {
    enum class kind { op, wait, record } what = kind::op;
    std::function<void()> run;     // op
    std::shared_ptr<event> point;  // wait, record
    bool wake_registered = false;  // wait: the event will wake the worker when it completes
    uint64_t sequence = 0;
  };

  const uint64_t id_;
  const int latency_us_;
  // Guarded by the device's wake_signal::mutex.
  std::deque<entry> queue_;
  uint64_t queued_ = 0;    // sequence number of the last entry queued
  uint64_t finished_ = 0;  // sequence number of the last entry run (or skipped)
  std::string failure_;    // the first op's error; empty while the stream is healthy
};

/// A simulated device: one worker thread for all its streams.
class device_worker {
 public:
  explicit device_worker(int index);
  ~device_worker();  // stops the worker (queued work that has not run is dropped) and joins it
  device_worker(const device_worker&) = delete;
  device_worker& operator=(const device_worker&) = delete;

  int index() const { return index_; }
  const std::shared_ptr<memory_counter>& memory() const { return memory_; }

  /// A new stream whose ops each wait `latency_us` on the worker before they run.
  std::shared_ptr<stream> open_stream(int latency_us);
  /// Waits until the stream has run everything queued, then forgets it.
  void close_stream(const std::shared_ptr<stream>& s);

  /// Queues `op` on `s` and returns its sequence number; throws if an earlier op of `s` failed.
  uint64_t enqueue(stream& s, std::function<void()> op);
  /// `s` runs nothing queued after this until `point` is complete.
  void enqueue_wait(stream& s, std::shared_ptr<event> point);
  /// An event that completes when `s` reaches this point.
  std::shared_ptr<event> enqueue_record(stream& s);
  /// Blocks until `s` has run entry `sequence`; throws if `s` has failed by then.
  void wait(stream& s, uint64_t sequence);
  /// Blocks until `s` has run everything queued so far; throws if `s` has failed.
  void drain(stream& s);

  /// While held (a count), the worker starts nothing: tests queue work on several streams and
  /// release it at once, so the interleaving does not depend on the host's timing.
  void hold();
  void release();

 private:
  void run_worker();
  /// Under the lock: the next entry to run (op or record) of some stream, round-robin, popping
  /// satisfied waits; null when every stream is empty or blocked.
  stream* pick(stream::entry& picked);
  void throw_if_failed(const stream& s) const;

  const int index_;
  const std::shared_ptr<wake_signal> signal_ = std::make_shared<wake_signal>();
  const std::shared_ptr<memory_counter> memory_ = std::make_shared<memory_counter>();
  // Guarded by signal_->mutex.
  std::vector<std::shared_ptr<stream>> streams_;
  std::size_t next_ = 0;  // round-robin position
  int holds_ = 0;
  bool stop_ = false;
  uint64_t next_stream_id_ = 1;
  std::thread worker_;
};

}  // namespace petra::sim

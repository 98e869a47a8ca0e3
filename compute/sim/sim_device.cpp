// The worker of a simulated device: streams in order, interleaved round-robin, with events.
#include "compute/sim/sim_device.hpp"

#include <chrono>
#include <stdexcept>

namespace petra::sim {

bool event::complete() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return complete_;
}

bool event::on_complete(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (complete_) return false;
  waiters_.push_back(std::move(wake));
  return true;
}

void event::mark_complete() {
  std::vector<std::function<void()>> waiters;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    complete_ = true;
    waiters.swap(waiters_);
  }
  for (auto& wake : waiters) wake();  // outside the lock: a waker takes its device's lock
}

device_worker::device_worker(int index) : index_(index) {
  worker_ = std::thread([this] { run_worker(); });
}

device_worker::~device_worker() {
  {
    std::lock_guard<std::mutex> lock(signal_->mutex);
    stop_ = true;
  }
  signal_->work.notify_all();
  worker_.join();
}

std::shared_ptr<stream> device_worker::open_stream(int latency_us) {
  if (latency_us < 0)
    throw std::invalid_argument("sim:" + std::to_string(index_) +
                                ": sim_latency_us = " + std::to_string(latency_us) + " must not be negative");
  std::lock_guard<std::mutex> lock(signal_->mutex);
  auto s = std::make_shared<stream>(next_stream_id_++, latency_us);
  streams_.push_back(s);
  return s;
}

void device_worker::close_stream(const std::shared_ptr<stream>& s) {
  std::unique_lock<std::mutex> lock(signal_->mutex);
  signal_->done.wait(lock, [&] { return s->finished_ == s->queued_ || stop_; });
  for (std::size_t i = 0; i < streams_.size(); ++i)
    if (streams_[i] == s) {
      streams_.erase(streams_.begin() + static_cast<std::ptrdiff_t>(i));
      if (next_ > i) --next_;
      break;
    }
}

void device_worker::throw_if_failed(const stream& s) const {
  if (!s.failure_.empty())
    throw std::runtime_error("sim:" + std::to_string(index_) + " stream " + std::to_string(s.id_) +
                             ": an earlier op failed, so nothing after it ran: " + s.failure_);
}

uint64_t device_worker::enqueue(stream& s, std::function<void()> op) {
  uint64_t sequence = 0;
  {
    std::lock_guard<std::mutex> lock(signal_->mutex);
    throw_if_failed(s);
    stream::entry e;
    e.run = std::move(op);
    e.sequence = sequence = ++s.queued_;
    s.queue_.push_back(std::move(e));
  }
  signal_->work.notify_one();
  return sequence;
}

void device_worker::enqueue_wait(stream& s, std::shared_ptr<event> point) {
  {
    std::lock_guard<std::mutex> lock(signal_->mutex);
    throw_if_failed(s);
    stream::entry e;
    e.what = stream::entry::kind::wait;
    e.point = std::move(point);
    e.sequence = ++s.queued_;
    s.queue_.push_back(std::move(e));
  }
  signal_->work.notify_one();
}

std::shared_ptr<event> device_worker::enqueue_record(stream& s) {
  auto point = std::make_shared<event>();
  {
    std::lock_guard<std::mutex> lock(signal_->mutex);
    throw_if_failed(s);
    stream::entry e;
    e.what = stream::entry::kind::record;
    e.point = point;
    e.sequence = ++s.queued_;
    s.queue_.push_back(std::move(e));
  }
  signal_->work.notify_one();
  return point;
}

void device_worker::wait(stream& s, uint64_t sequence) {
  std::unique_lock<std::mutex> lock(signal_->mutex);
  signal_->done.wait(lock, [&] { return s.finished_ >= sequence || stop_; });
  throw_if_failed(s);
}

void device_worker::drain(stream& s) {
  uint64_t last = 0;
  {
    std::lock_guard<std::mutex> lock(signal_->mutex);
    last = s.queued_;
  }
  wait(s, last);
}

void device_worker::hold() {
  std::lock_guard<std::mutex> lock(signal_->mutex);
  ++holds_;
}

void device_worker::release() {
  {
    std::lock_guard<std::mutex> lock(signal_->mutex);
    if (holds_ > 0) --holds_;
  }
  signal_->work.notify_all();
}

stream* device_worker::pick(stream::entry& picked) {
  if (holds_ > 0) return nullptr;
  const std::size_t count = streams_.size();
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t i = (next_ + k) % count;
    stream& s = *streams_[i];
    while (!s.queue_.empty()) {
      stream::entry& front = s.queue_.front();
      if (front.what == stream::entry::kind::wait) {
        if (front.point->complete()) {
          s.finished_ = front.sequence;
          s.queue_.pop_front();
          signal_->done.notify_all();
          continue;
        }
        if (!front.wake_registered) {
          // Completion takes this device's lock to notify, so no wake-up is lost between this
          // scan and the worker's sleep (the worker holds the lock until it sleeps). An event
          // completed since the check above is taken on the next pass of this loop.
          front.wake_registered = front.point->on_complete([signal = signal_] {
            std::lock_guard<std::mutex> lock(signal->mutex);
            signal->work.notify_all();
          });
          if (!front.wake_registered) continue;
        }
        break;  // this stream is blocked; try the next one
      }
      picked = std::move(front);
      s.queue_.pop_front();
      next_ = (i + 1) % count;
      return &s;
    }
  }
  return nullptr;
}

void device_worker::run_worker() {
  std::unique_lock<std::mutex> lock(signal_->mutex);
  for (;;) {
    if (stop_) return;
    stream::entry picked;
    stream* s = pick(picked);
    if (!s) {
      signal_->work.wait(lock);
      continue;
    }
    // The stream cannot go away meanwhile: close_stream waits for its queue to be finished.
    const bool failed = !s->failure_.empty();
    const uint64_t sequence = picked.sequence;
    lock.unlock();
    std::string failure;
    if (picked.what == stream::entry::kind::record) {
      picked.point->mark_complete();  // also when failed: waiters must not hang on a dead stream
    } else if (!failed) {
      if (s->latency_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(s->latency_us_));
      try {
        picked.run();
      } catch (const std::exception& e) {
        failure = *e.what() ? e.what() : "an exception without a message";
      } catch (...) {
        failure = "an exception that is not a std::exception";
      }
    }
    picked = stream::entry{};  // drop the op's tensors before anyone learns that it finished
    lock.lock();
    if (!failure.empty() && s->failure_.empty()) s->failure_ = failure;
    s->finished_ = sequence;
    signal_->done.notify_all();
  }
}

}  // namespace petra::sim

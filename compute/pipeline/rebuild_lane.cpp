// The rebuild lane: one task at a time, on its own thread for a CPU backend.
#include "compute/pipeline/rebuild_lane.hpp"

#include <stdexcept>
#include <utility>

namespace petra {

rebuild_lane::rebuild_lane(std::unique_ptr<backend> rebuild) : backend_(std::move(rebuild)) {
  if (!backend_) throw std::invalid_argument("rebuild_lane: no backend");
  // A CPU backend computes on the thread that calls it: the rebuild needs a thread of its own to
  // run beside the gradient. Streams of a device need none: their ops are queued and run there.
  if (backend_->where().type == device_type::cpu) thread_ = std::thread([this] { run(); });
}

rebuild_lane::~rebuild_lane() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void rebuild_lane::launch(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (busy_) throw std::logic_error("rebuild_lane::launch while a task is running: wait() for it first");
  if (!thread_.joinable()) {
    lock.unlock();
    try {
      task();
    } catch (...) {
      lock.lock();
      failure_ = std::current_exception();
    }
    return;
  }
  task_ = std::move(task);
  busy_ = true;
  changed_.notify_all();
}

void rebuild_lane::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !busy_; });
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void rebuild_lane::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stop_ || busy_; });
    if (stop_) return;
    std::function<void()> task = std::move(task_);
    lock.unlock();
    std::exception_ptr failure;
    try {
      task();
    } catch (...) {
      failure = std::current_exception();
    }
    task = nullptr;  // the task's captures go before the caller hears it is done
    lock.lock();
    failure_ = failure;
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace petra

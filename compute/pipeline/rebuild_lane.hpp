// The second stream of a reversible stage's backward: a backend of the stage's device on which
// the input of one block is rebuilt while the stage's own backend differentiates the block after it.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "compute/backend.hpp"

namespace petra {

class rebuild_lane {
 public:
  /// `rebuild` is a second backend of the stage's device: on a GPU or a sim device another stream
  /// (its ops are queued, so the caller issues them and the device overlaps the streams), on the CPU
  /// a backend with threads of its own, whose ops the lane's one host thread runs.
  explicit rebuild_lane(std::unique_ptr<backend> rebuild);
  ~rebuild_lane();
  rebuild_lane(const rebuild_lane&) = delete;
  rebuild_lane& operator=(const rebuild_lane&) = delete;

  backend& compute() { return *backend_; }

  /// Starts `task` (ops on compute() only) beside the caller: on the lane's thread when the backend
  /// runs its ops on the calling thread (the CPU), here otherwise (its ops are only queued).
  void launch(std::function<void()> task);
  /// Waits for the launched task and rethrows what it threw.
  void wait();

 private:
  void run();

  std::unique_ptr<backend> backend_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> task_;  // guarded by mutex_: the task given to the thread, until it is done
  bool busy_ = false;           // guarded by mutex_
  bool stop_ = false;           // guarded by mutex_
  std::exception_ptr failure_;  // guarded by mutex_
  std::thread thread_;          // only for a backend whose ops run on the caller
};

}  // namespace petra

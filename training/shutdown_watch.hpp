// A bound on a complete run's teardown. Once a run's summary is written nothing of it can be lost,
// and the process has only to stop its actors and its connections to nodes; that takes well under a
// second, and at most the teardown's own bounded waits (about 25 s with a silent node). Should it
// hang anyway (a thread of the actor system that never ends), the watch says where the teardown
// was and ends the process instead of leaving a user's shell, a sweep or a script waiting forever.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace petra::training {

class shutdown_watch {
 public:
  /// What the watch does when its time is up, given the line it printed: by default `_exit(0)` (the
  /// run is complete); tests record it instead.
  using expiry_fn = std::function<void(const std::string& line)>;

  shutdown_watch() = default;
  ~shutdown_watch();
  shutdown_watch(const shutdown_watch&) = delete;
  shutdown_watch& operator=(const shutdown_watch&) = delete;

  /// Starts the count for the teardown of the run in `run_dir` (re-arming restarts it). `who` starts
  /// the line ("petra train").
  void arm(std::chrono::milliseconds limit, const std::string& who, const std::string& run_dir,
           expiry_fn on_expiry = {});
  /// The teardown ended: the watch stops counting (and its thread ends). Safe to call when not armed.
  void disarm();

  /// The teardown step now running, for the line of an expired watch ("stopping the pipeline's actors",
  /// "the actor system's shutdown, 1 actor still running"). Process-wide: the teardown runs in
  /// whichever object owns the actors, and the watch lives in the command that ran the run.
  static void note_step(const std::string& step);
  static std::string last_step();

  /// The default limit: twice the teardown's own bounded waits, plus room for a loaded machine.
  static constexpr std::chrono::seconds default_limit{60};

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false;
  std::thread thread_;
};

}  // namespace petra::training

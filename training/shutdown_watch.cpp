#include "training/shutdown_watch.hpp"

#include <unistd.h>

#include <cstdio>

namespace petra::training {
namespace {

std::mutex step_mutex;
std::string step_now;  // guarded by step_mutex

}  // namespace

shutdown_watch::~shutdown_watch() { disarm(); }

void shutdown_watch::note_step(const std::string& step) {
  std::lock_guard<std::mutex> lock(step_mutex);
  step_now = step;
}

std::string shutdown_watch::last_step() {
  std::lock_guard<std::mutex> lock(step_mutex);
  return step_now;
}

void shutdown_watch::arm(std::chrono::milliseconds limit, const std::string& who, const std::string& run_dir,
                         expiry_fn on_expiry) {
  disarm();
  note_step("");
  if (!on_expiry) on_expiry = [](const std::string&) { ::_exit(0); };
  std::unique_lock<std::mutex> lock(mutex_);
  armed_ = true;
  thread_ = std::thread([this, limit, who, run_dir, on_expiry = std::move(on_expiry)] {
    std::unique_lock<std::mutex> held(mutex_);
    if (wake_.wait_for(held, limit, [this] { return !armed_; })) return;
    const std::string step = last_step();
    const std::string line = who + ": the run is complete (its summary is written: " + run_dir +
                             ") but its shutdown has not ended within " +
                             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) +
                             " s" + (step.empty() ? std::string() : " (at: " + step + ")") +
                             "; exiting without waiting for it\n";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    std::fflush(stdout);
    armed_ = false;
    held.unlock();
    on_expiry(line);
  });
}

void shutdown_watch::disarm() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace petra::training

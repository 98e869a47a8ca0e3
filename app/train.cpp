// `petra train`: the trainer loop of training/ with the runtime runtime.mode names. A Ctrl-C (or
// SIGTERM) ends the run at once and says how to continue it: every file of the run directory is
// written atomically, so the last checkpoint and snapshot are whole and `--resume` picks them up.
// Once the run's summary is written the run is complete: a signal then only ends the shutdown, and
// the process says so and exits 0 (a sweep records the point, then stops).
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include "actors/coordinator.hpp"
#include "app/commands.hpp"
#include "training/shutdown_watch.hpp"
#include "training/simulate_runtime.hpp"
#include "training/stage_threads.hpp"
#include "training/train_loop.hpp"

namespace petra::app {
namespace {

// Built before any signal can need it: the handler only writes and unlinks them (write, unlink and
// _exit are async-signal-safe; nothing else is).
std::array<char, 4096> interrupt_message{};
std::size_t interrupt_length = 0;
std::array<char, 4096> pid_file{};  // the run directory's train.pid ("" before it exists)
volatile sig_atomic_t run_complete = 0;
volatile sig_atomic_t signal_after_completion = 0;

void set_interrupt_message(const std::string& text) {
  interrupt_length = std::min(text.size(), interrupt_message.size());
  std::memcpy(interrupt_message.data(), text.data(), interrupt_length);
}

extern "C" void on_interrupt(int signal) {
  // train.pid names a running trainer: a process ending here is not one any more.
  if (pid_file[0] != '\0') ::unlink(pid_file.data());
  ssize_t ignored = ::write(STDERR_FILENO, interrupt_message.data(), interrupt_length);
  (void)ignored;
  // A complete run loses nothing: the first signal lets its shutdown end (it is short), a second
  // one ends it at once.
  if (run_complete && !signal_after_completion) {
    signal_after_completion = signal;
    return;
  }
  ::_exit(run_complete ? 0 : 128 + signal);  // the shell's convention: 130 for SIGINT, 143 for SIGTERM
}

void catch_interrupts() {
  run_complete = 0;
  pid_file[0] = '\0';
  set_interrupt_message(
      "\npetra train: interrupted before the run directory was made; nothing was written\n");
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

int train_command(const train_options& options) {
  train_options with_hint = options;
  std::string run_path;
  with_hint.on_run_dir = [&](const std::string& dir) {
    run_path = dir;
    const std::string pid = dir + "/train.pid";
    if (pid.size() < pid_file.size()) std::memcpy(pid_file.data(), pid.c_str(), pid.size() + 1);
    set_interrupt_message(
        "\npetra train: interrupted; " + dir +
        ": its last checkpoint (and snapshot, if any) is whole; continue with: petra train --resume " + dir +
        "\n");
  };
  // A complete run's teardown is bounded: should it hang, the watch ends the process (code 0).
  training::shutdown_watch teardown;
  with_hint.on_complete = [&] {
    set_interrupt_message("\npetra train: signal received after the run completed; " + run_path +
                          " holds the whole run (its summary is written)\n");
    run_complete = 1;
    teardown.arm(training::shutdown_watch::default_limit, "petra train", run_path);
  };
  catch_interrupts();
  const int status = run_training(
      with_hint, [](const config::run_config& c, training_data& data, const optimizer_settings& opt) {
        if (c.runtime.mode == config::runtime_mode::simulate) return make_simulate_runtime(c, data, opt);
        for (const std::string& line : describe_stage_threads(c, usable_cores()))
          std::printf("%s\n", line.c_str());
        return make_actor_runtime(c, data, opt);
      });
  teardown.disarm();
  // The next run of this process (a sweep's next point) starts with the plain message again.
  set_interrupt_message("\npetra: interrupted\n");
  pid_file[0] = '\0';
  run_complete = 0;
  return status;
}

int signal_after_completed_run() {
  const int s = signal_after_completion;
  signal_after_completion = 0;
  return s;
}

}  // namespace petra::app

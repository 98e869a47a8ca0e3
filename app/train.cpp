// `petra train`: the trainer loop of training/ with the runtime runtime.mode names. A Ctrl-C (or
// SIGTERM) ends the run at once and says how to continue it: every file of the run directory is
// written atomically, so the last checkpoint and snapshot are whole and `--resume` picks them up.
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include "actors/coordinator.hpp"
#include "app/commands.hpp"
#include "training/simulate_runtime.hpp"
#include "training/stage_threads.hpp"
#include "training/train_loop.hpp"

namespace petra::app {
namespace {

// Built before any signal can need it: the handler only writes it (write and _exit are
// async-signal-safe; nothing else is).
std::array<char, 4096> interrupt_message{};
std::size_t interrupt_length = 0;

void set_interrupt_message(const std::string& text) {
  interrupt_length = std::min(text.size(), interrupt_message.size());
  std::memcpy(interrupt_message.data(), text.data(), interrupt_length);
}

extern "C" void on_interrupt(int signal) {
  ssize_t ignored = ::write(STDERR_FILENO, interrupt_message.data(), interrupt_length);
  (void)ignored;
  ::_exit(128 + signal);  // the shell's convention: 130 for SIGINT, 143 for SIGTERM
}

void catch_interrupts() {
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
  with_hint.on_run_dir = [](const std::string& dir) {
    set_interrupt_message(
        "\npetra train: interrupted; " + dir +
        ": its last checkpoint (and snapshot, if any) is whole; continue with: petra train --resume " + dir +
        "\n");
  };
  catch_interrupts();
  return run_training(with_hint,
                      [](const config::run_config& c, training_data& data, const optimizer_settings& opt) {
                        if (c.runtime.mode == config::runtime_mode::simulate)
                          return make_simulate_runtime(c, data, opt);
                        for (const std::string& line : describe_stage_threads(c, usable_cores()))
                          std::printf("%s\n", line.c_str());
                        return make_actor_runtime(c, data, opt);
                      });
}

}  // namespace petra::app

// Which micro-batches of a run its timeline (output.trace) records: output.trace_steps fitted to
// the run's length, so that a short run's trace is never empty.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"

namespace petra {

/// Micro-batches `first`..`last` of the run (counted from its first, 0-based, inclusive).
struct trace_window {
  int64_t first = 0;
  int64_t last = 0;
  std::string fitted;  // why it differs from output.trace_steps; "" when it does not
};

/// output.trace_steps for a run of `run_micro_batches` micro-batches. At its default value, a window
/// the run does not reach becomes the run's last trace_steps span (or the whole run); set to another
/// window, one that starts after the run's end throws config::config_error naming where it was set,
/// and one that ends after it is cut at the run's end.
trace_window fit_trace_window(const config::run_config& c, int64_t run_micro_batches);

/// "micro-batches 0-31 of the run (the whole run: ...)", for the line the trainer prints.
std::string describe(const trace_window& w);

/// What a process's trace.json holds: the part of `w` it trained (micro-batches `from` to `to` - 1
/// of the run: a resumed process starts later, a stopped one ends early), and the micro-batch ids
/// the file labels them with (epoch e's ids start at e · per_epoch: run position + per_epoch).
std::string describe_traced(const trace_window& w, int64_t per_epoch, int64_t from, int64_t to);

}  // namespace petra

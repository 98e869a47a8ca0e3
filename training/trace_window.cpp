// output.trace_steps fitted to the run.
#include "training/trace_window.hpp"

#include <algorithm>

namespace petra {

trace_window fit_trace_window(const config::run_config& c, int64_t run_micro_batches) {
  const std::vector<int64_t>& asked = c.output.trace_steps;
  trace_window w{asked[0], asked[1], ""};
  if (w.last < run_micro_batches) return w;
  const std::string window = "[" + std::to_string(asked[0]) + ", " + std::to_string(asked[1]) + "]";
  const std::string count = std::to_string(run_micro_batches) + " micro-batches";
  // A config.yaml petra wrote names every key: the default window written there is still the default.
  const bool chosen = config::is_set(c, "output.trace_steps") && asked != config::output_config{}.trace_steps;
  if (chosen) {
    if (w.first >= run_micro_batches)
      throw config::config_error(
          "output.trace_steps " + config::where(c, "output.trace_steps") + ": " + window +
          " starts after the run's end (it has " + count + ", 0-" + std::to_string(run_micro_batches - 1) +
          "); choose a window inside it, or leave the key out to trace the run's last " +
          std::to_string(asked[1] - asked[0] + 1));
    w.last = run_micro_batches - 1;
    w.fitted = "output.trace_steps " + window + " cut at the run's end: it has " + count;
    return w;
  }
  w.last = run_micro_batches - 1;
  w.first = std::max<int64_t>(0, run_micro_batches - (asked[1] - asked[0] + 1));
  w.fitted = (w.first == 0 ? "the whole run" : "the run's last " + std::to_string(w.last - w.first + 1)) +
             ": output.trace_steps " + window + " ends beyond its " + count;
  return w;
}

std::string describe(const trace_window& w) {
  std::string text =
      "micro-batches " + std::to_string(w.first) + "-" + std::to_string(w.last) + " of the run";
  if (!w.fitted.empty()) text += " (" + w.fitted + ")";
  return text;
}

std::string describe_traced(const trace_window& w, int64_t per_epoch, int64_t from, int64_t to) {
  const int64_t first = std::max(w.first, from), last = std::min(w.last, to - 1);
  const std::string trained = "this process trained micro-batches " + std::to_string(from) + "-" +
                              std::to_string(to - 1) + " of the run";
  if (first > last)
    return "no micro-batch: " + trained + ", none of the window " + std::to_string(w.first) + "-" +
           std::to_string(w.last);
  std::string text = describe(trace_window{first, last, w.fitted});
  if (first != w.first || last != w.last)
    text += " (" + trained + " of the window " + std::to_string(w.first) + "-" + std::to_string(w.last) + ")";
  return text + "; trace.json labels them by micro-batch id, " + std::to_string(first + per_epoch) + "-" +
         std::to_string(last + per_epoch) + " (id = micro-batch of the run + " + std::to_string(per_epoch) +
         ")";
}

}  // namespace petra

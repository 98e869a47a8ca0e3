// Part (d) of bench_runtime: what recording the timeline (output.trace) costs. Two runtimes of the
// default preset in one process, one tracing every micro-batch and one not, run phases in turn
// (the same work, the same machine state), and the trace's size per 500 micro-batches.
#include <unistd.h>

#include <filesystem>

#include "actors/coordinator.hpp"
#include "bench/runtime/common.hpp"
#include "training/setup.hpp"

namespace petra::bench {

namespace {

std::unique_ptr<pipeline_runtime> runtime_for(bool trace, int64_t count, int phases, training_data& data) {
  std::vector<std::string> sets = {"runtime.mode=async", "runtime.threads=" + std::to_string(cores),
                                   "data.train_limit=" + std::to_string(64 * count), "training.epochs=1000"};
  if (trace) {
    sets.push_back("output.trace=true");
    // Every micro-batch of the run: epoch ids start at the epoch size; phases run epochs 2, 3, ...
    sets.push_back("output.trace_steps=[0," + std::to_string(count * (phases + 3)) + "]");
  }
  const config::run_config cfg = config::load_config("default", sets);
  data = load_training_data(cfg);
  const int64_t per_epoch = data.train_feed->micro_batches_per_epoch();
  return make_actor_runtime(cfg, data, optimizer_for(cfg.training, per_epoch / cfg.training.accumulation));
}

}  // namespace

void part_trace(int phases, int64_t count) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    heading("(d)   skipped: Fashion-MNIST is missing (/usr/share/datasets/fashion-mnist)");
    return;
  }
  training_data data_off, data_on;
  auto off = runtime_for(false, count, phases, data_off);
  auto on = runtime_for(true, count, phases, data_on);
  off->train(phase_request::of(1, 0, std::min<int64_t>(count, 24)), {});  // warm-up
  on->train(phase_request::of(1, 0, std::min<int64_t>(count, 24)), {});
  std::vector<double> wall_off, wall_on, ratio;
  for (int p = 0; p < phases; ++p) {
    auto t0 = clock_type::now();
    off->train(phase_request::of(1, 0, count), {});
    wall_off.push_back(seconds_since(t0) / static_cast<double>(count));
    t0 = clock_type::now();
    on->train(phase_request::of(1, 0, count), {});
    wall_on.push_back(seconds_since(t0) / static_cast<double>(count));
    ratio.push_back(wall_on.back() / wall_off.back() - 1);
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / ("petra-bench-trace-" + std::to_string(::getpid()) + ".json"))
          .string();
  on->write_trace(path);
  const double bytes = static_cast<double>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  const double traced = static_cast<double>(count) * (phases + 1) + std::min<int64_t>(count, 24);
  heading("(d)   output.trace on the default preset (async PETRA, J = 8, micro-batch 64), phases in turn");
  row("wall per micro-batch, trace off", summarize(wall_off), "ms", 1e3);
  row("wall per micro-batch, trace on (every micro-batch recorded)", summarize(wall_on), "ms", 1e3);
  row("tracing overhead = on / off - 1   (target <= 2 %)", summarize(ratio), "%", 1e2);
  row("trace.json per 500 micro-batches (J = 8: ~500 ticks)",
      summary{bytes / traced * 500, bytes / traced * 500}, "MB", 1e-6);
}

}  // namespace petra::bench

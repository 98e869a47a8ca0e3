// The stages' compute threads: the default split of the machine's cores, pinning, and the checks.
#include "training/stage_threads.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "training/setup.hpp"

namespace petra {

namespace {

bool local(const config::run_config& c, std::size_t j) {
  return j >= c.pipeline.nodes.size() || c.pipeline.nodes[j].empty() || c.pipeline.nodes[j] == "local";
}

std::size_t cpu_stage_count(const config::run_config& c, std::size_t stages) {
  std::size_t n = 0;
  for (std::size_t j = 0; j < stages; ++j) n += cpu_stage(c, j);
  return n;
}

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

bool cpu_stage(const config::run_config& c, std::size_t j) {
  return j >= c.pipeline.devices.size() || c.pipeline.devices[j].type == config::device_spec::kind::cpu;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int stage_threads(const config::run_config& c, std::size_t j, int cores) {
  if (j < c.pipeline.threads.size()) return c.pipeline.threads[j];
  if (!cpu_stage(c, j)) return 1;
  const std::size_t n = std::max<std::size_t>(1, cpu_stage_count(c, stage_sizes(c).size()));
  return std::max(1, cores / static_cast<int>(n));
}

std::vector<int> local_cpu_threads(const config::run_config& c, int cores) {
  std::vector<int> out;
  for (std::size_t j = 0; j < stage_sizes(c).size(); ++j)
    out.push_back(cpu_stage(c, j) && local(c, j) ? stage_threads(c, j, cores) : 0);
  return out;
}

bool stages_take_turns(const config::run_config& c, int cores) {
  if (c.runtime.pin_threads) return false;
  int total = 0;
  for (std::size_t j = 0; j < stage_sizes(c).size(); ++j)
    if (cpu_stage(c, j)) total += stage_threads(c, j, cores);
  return total > cores;
}

int scheduler_threads(const config::run_config& c, int cores) {
  return stages_take_turns(c, cores) ? std::max(c.runtime.threads, cores) : c.runtime.threads;
}

int node_scheduler_threads(int given, int cores) { return given > 0 ? given : std::max(2, cores); }

std::vector<int> stage_cores(const config::run_config& c, std::size_t j, int cores) {
  if (!c.runtime.pin_threads || !cpu_stage(c, j) || cores < 1) return {};
  int first = 0;  // over every CPU stage, wherever placed: nodes on one host pin to distinct cores
  for (std::size_t k = 0; k < j; ++k)
    if (cpu_stage(c, k)) first += stage_threads(c, k, cores);
  std::vector<int> out;
  for (int t = 0; t < stage_threads(c, j, cores); ++t) out.push_back((first + t) % cores);
  return out;
}

void check_stage_threads(const config::run_config& c, int cores) {
  for (std::size_t j = 0; j < c.pipeline.threads.size(); ++j)
    if (cpu_stage(c, j) && local(c, j) && c.pipeline.threads[j] > cores)
      throw config::config_error(
          "pipeline.threads[" + std::to_string(j) + "] = " + std::to_string(c.pipeline.threads[j]) +
          " (stage " + std::to_string(j + 1) + ") asks for more compute threads than this machine's " +
          plural(static_cast<std::size_t>(cores), "core") + ": give at most " + std::to_string(cores) +
          ", or leave pipeline.threads empty to split the cores over the stages");
}

std::vector<std::string> describe_stage_threads(const config::run_config& c, int cores) {
  const std::size_t stages = stage_sizes(c).size();
  std::size_t local_cpu = 0;
  int total = 0, least = 0, most = 0;
  for (std::size_t j = 0; j < stages; ++j) {
    if (!cpu_stage(c, j) || !local(c, j)) continue;
    const int t = stage_threads(c, j, cores);
    least = local_cpu == 0 ? t : std::min(least, t);
    most = std::max(most, t);
    total += t;
    ++local_cpu;
  }
  std::vector<std::string> out;
  if (local_cpu == 0) return out;
  const std::string each =
      least == most ? std::to_string(least) : std::to_string(least) + "-" + std::to_string(most);
  std::string line =
      "compute threads: " + plural(local_cpu, "CPU stage") + " × " + each + " thread" +
      (most == 1 ? "" : "s") + " on " + plural(static_cast<std::size_t>(cores), "core") +
      (c.pipeline.threads.empty() ? " (pipeline.threads not set: the cores split over the stages)"
                                  : " (pipeline.threads)");
  if (c.runtime.pin_threads) line += ", each stage pinned to cores of its own";
  if (stages_take_turns(c, cores))
    line += "; more threads than cores: the stages take turns on " +
            plural(static_cast<std::size_t>(scheduler_threads(c, cores)), "scheduler thread");
  out.push_back(line);
  if (!c.pipeline.threads.empty() && total > cores)
    out.push_back("warning: the CPU stages ask for " + std::to_string(total) + " compute threads on " +
                  plural(static_cast<std::size_t>(cores), "core") +
                  ": they will share cores and wait for each other (pipeline.threads summing to at most " +
                  std::to_string(cores) + " avoids that)");
  return out;
}

}  // namespace petra

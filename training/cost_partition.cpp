// The cut by measured cost: a linear partition by dynamic programming over the measured blocks.
#include "training/cost_partition.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>

#include "training/setup.hpp"
#include "training/simulator.hpp"
#include "training/stage_threads.hpp"

namespace petra {

std::vector<int> partition_by_cost(const std::vector<double>& costs, int stages,
                                   const std::vector<double>& last_costs) {
  const int n = static_cast<int>(costs.size());
  if (stages < 1 || stages > n)
    throw std::invalid_argument("cannot cut " + std::to_string(n) + " blocks into " + std::to_string(stages) +
                                " non-empty stages");
  if (!last_costs.empty() && last_costs.size() != costs.size())
    throw std::invalid_argument(std::to_string(last_costs.size()) + " last-stage costs for " +
                                std::to_string(n) + " blocks");
  std::vector<double> prefix(static_cast<std::size_t>(n) + 1, 0.0), last_prefix = prefix;
  for (int i = 0; i < n; ++i) {
    prefix[i + 1] = prefix[i] + costs[static_cast<std::size_t>(i)];
    last_prefix[i + 1] =
        last_prefix[i] + (last_costs.empty() ? costs : last_costs)[static_cast<std::size_t>(i)];
  }
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the smallest largest sum cutting the first i blocks into k groups; last[k][i]: where
  // its last group starts (the latest such start on a tie: the later groups stay small).
  std::vector<std::vector<double>> best(static_cast<std::size_t>(stages) + 1,
                                        std::vector<double>(static_cast<std::size_t>(n) + 1, inf));
  std::vector<std::vector<int>> last(best.size(), std::vector<int>(static_cast<std::size_t>(n) + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k)
    for (int i = k == stages ? n : k; i <= n; ++i)  // the last group ends the model
      for (int s = k - 1; s < i; ++s) {
        const double group = k == stages ? last_prefix[i] - last_prefix[s] : prefix[i] - prefix[s];
        const double m = std::max(best[k - 1][s], group);
        if (m <= best[k][i]) best[k][i] = m, last[k][i] = s;
      }
  std::vector<int> sizes(static_cast<std::size_t>(stages));
  for (int k = stages, i = n; k >= 1; --k) {
    const int s = last[k][i];
    sizes[static_cast<std::size_t>(k - 1)] = i - s;
    i = s;
  }
  return sizes;
}

std::vector<int> split_cores_by_cost(const std::vector<double>& costs, int cores, int measured_threads) {
  std::vector<int> threads(costs.size(), 1);
  if (costs.empty()) return threads;
  const auto predicted = [&](std::size_t j) { return costs[j] * measured_threads / threads[j]; };
  for (int spare = cores - static_cast<int>(costs.size()); spare > 0; --spare) {
    std::size_t slowest = 0;
    for (std::size_t j = 1; j < costs.size(); ++j)
      if (predicted(j) > predicted(slowest)) slowest = j;
    ++threads[slowest];
  }
  return threads;
}

block_costs measure_block_costs(const config::run_config& c, int threads, int micro_batches, int warm_up) {
  // One block per stage, every one on stage 1's device with `threads` threads, in this process,
  // without faults: the blocks as a stage computes them, nothing else.
  config::run_config one = c;
  const std::size_t blocks = [&] {
    config::run_config whole = c;
    whole.pipeline.stage_blocks.clear();
    whole.pipeline.stages = 0;
    return stage_sizes(whole).size();
  }();
  const config::device_spec where =
      c.pipeline.devices.empty() ? config::device_spec{} : c.pipeline.devices[0];
  one.pipeline.stage_blocks.clear();
  one.pipeline.stages = 0;
  one.pipeline.devices.assign(blocks, where);
  one.pipeline.threads.assign(blocks, threads);
  one.pipeline.nodes.clear();
  one.pipeline.migrate.clear();
  one.faults = config::faults_config{};
  one.runtime.overlap_rebuild = false;
  std::vector<placed_stage> placed = build_placed_stages(one, optimizer_for(one.training, 1000));
  std::vector<stage*> order;
  for (placed_stage& p : placed) order.push_back(p.compute.get());
  std::unique_ptr<backend> loss = make_loss_backend();
  simulator sim(order, *loss, 1);
  const network_spec spec = model_spec(one.model);
  const activation_shape shape = input_shape(spec, one.training.micro_batch);
  std::mt19937 rng(static_cast<uint32_t>(one.training.seed));
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  int64_t next_id = 0;
  const auto random_images = [&] {
    tensor images = tensor::empty(shape.x1);
    float* px = images.data();
    for (int64_t i = 0; i < images.numel(); ++i) px[i] = pixel(rng);
    return images;
  };
  const auto feed = [&](int64_t count) {
    const int64_t end = next_id + count;
    sim.run([&](micro_batch& mb) {
      if (next_id >= end) return false;
      mb.id = next_id++;
      mb.images = activation{random_images(), {}};
      mb.labels.resize(static_cast<std::size_t>(one.training.micro_batch));
      for (int32_t& l : mb.labels)
        l = static_cast<int32_t>(rng() % static_cast<uint32_t>(one.model.num_classes));
      return true;
    });
  };
  feed(warm_up);  // the first calls create the kernels' plans and the pools' blocks
  std::vector<double> before;
  for (std::size_t j = 0; j < order.size(); ++j) before.push_back(sim.busy_seconds(j));
  feed(micro_batches);
  block_costs out;
  for (std::size_t j = 0; j < order.size(); ++j)
    out.seconds.push_back((sim.busy_seconds(j) - before[j]) / static_cast<double>(micro_batches));
  out.last_seconds = out.seconds;  // the measurement's last stage, the head's, is one already
  if (!method_for(one.training).for_stage(0, true).tape_forward) return out;
  // Each block's forward alone, through the blocks in turn, what it kept dropped after each.
  std::vector<double> forward(order.size(), 0.0);
  for (int m = 0; m < micro_batches; ++m, ++next_id) {
    activation h{order.front()->compute_backend().import(random_images()), {}};
    for (std::size_t j = 0; j < order.size(); ++j) {
      backend& be = order[j]->compute_backend();
      const auto start = std::chrono::steady_clock::now();
      h = order[j]->forward(h, next_id, 0);
      be.synchronize();
      forward[j] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      order[j]->drop([](int64_t) { return true; });
      if (j + 1 < order.size()) h = hand_over(h, be, order[j + 1]->compute_backend());
    }
  }
  // What the last stage saves; at least a quarter of the cost is left whatever the clock said.
  for (std::size_t j = 0; j + 1 < order.size(); ++j)
    out.last_seconds[j] = std::max(out.seconds[j] - forward[j] / micro_batches, 0.25 * out.seconds[j]);
  return out;
}

namespace {

/// Each stage's cost under the cut in c.pipeline.stage_blocks: its blocks' seconds, the last
/// stage's their last_seconds.
std::vector<double> stage_costs(const config::run_config& c, const block_costs& costs) {
  std::vector<double> out;
  std::size_t b = 0;
  for (std::size_t j = 0; j < c.pipeline.stage_blocks.size(); ++j) {
    const bool last = j + 1 == c.pipeline.stage_blocks.size();
    double sum = 0;
    for (int k = 0; k < c.pipeline.stage_blocks[j]; ++k, ++b)
      sum += (last ? costs.last_seconds : costs.seconds)[b];
    out.push_back(sum);
  }
  return out;
}

/// Sets pipeline.threads for the cut in c.pipeline.stage_blocks: the cores over its CPU stages by
/// the stages' measured `costs` (on `measured` threads each), 1 for the others; returns the line
/// that says so. Leaves it empty and returns "" when there are no more cores than CPU stages.
std::string split_threads_by_cost(config::run_config& c, const std::vector<double>& costs, int measured,
                                  int cores) {
  std::vector<double> stage_cost;
  std::vector<std::size_t> cpu_stages;
  for (std::size_t j = 0; j < c.pipeline.stage_blocks.size(); ++j)
    if (cpu_stage(c, j)) cpu_stages.push_back(j), stage_cost.push_back(costs[j]);
  // Nothing to split with a core or less per stage: the default (1 each, taking turns) stands.
  if (cpu_stages.empty() || cores <= static_cast<int>(cpu_stages.size())) return "";
  const std::vector<int> split = split_cores_by_cost(stage_cost, cores, measured);
  c.pipeline.threads.assign(c.pipeline.stage_blocks.size(), 1);
  std::string list, slowest_text;
  double slowest = 0;
  for (std::size_t i = 0; i < cpu_stages.size(); ++i) {
    c.pipeline.threads[cpu_stages[i]] = split[i];
    slowest = std::max(slowest, stage_cost[i] * measured / split[i]);
  }
  for (std::size_t j = 0; j < c.pipeline.threads.size(); ++j)
    list += (j ? "," : "") + std::to_string(c.pipeline.threads[j]);
  char predicted[96];
  std::snprintf(predicted, sizeof predicted, "the slowest stage predicted at %.1f ms per micro-batch",
                1000 * slowest);
  return "compute threads by the same costs: pipeline.threads [" + list + "] on " + std::to_string(cores) +
         " core" + (cores == 1 ? "" : "s") + ", " + predicted;
}

}  // namespace

std::vector<std::string> resolve_measured_partition(config::run_config& c) {
  if (c.pipeline.stages <= 0 || !c.pipeline.stage_blocks.empty()) return {};
  const int stages = c.pipeline.stages;
  const int cores = usable_cores();
  // Each block timed on the threads a stage of the cut will have (the default split, or stage 1's).
  config::run_config cut = c;
  cut.pipeline.stages = 0;
  const std::size_t blocks = stage_sizes(cut).size();  // one block per stage
  if (static_cast<std::size_t>(stages) > blocks)
    throw config::config_error("pipeline.stages = " + std::to_string(stages) + " but the model has " +
                               std::to_string(blocks) + " blocks: give at most that many stages");
  cut.pipeline.stage_blocks = partition_by_cost(std::vector<double>(blocks, 1.0), stages);
  const int threads = stage_threads(cut, 0, cores);
  const block_costs costs = measure_block_costs(c, threads, 3, 1);
  c.pipeline.stage_blocks = partition_by_cost(costs.seconds, stages, costs.last_seconds);
  c.pipeline.stages = 0;
  const std::vector<double> per_stage = stage_costs(c, costs);
  std::string cost_text, cut_text;
  double busiest = 0, total = 0;
  for (std::size_t j = 0; j < per_stage.size(); ++j) {
    busiest = std::max(busiest, per_stage[j]), total += per_stage[j];
    cut_text += (j ? "," : "") + std::to_string(c.pipeline.stage_blocks[j]);
  }
  for (double cost : costs.seconds) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%s%.1f", cost_text.empty() ? "" : " ", 1000 * cost);
    cost_text += ms;
  }
  if (costs.last_seconds != costs.seconds) {  // the last stage's blocks, without their rebuild
    std::string last_text;
    const std::size_t first = costs.seconds.size() - static_cast<std::size_t>(c.pipeline.stage_blocks.back());
    for (std::size_t b = first; b < costs.seconds.size(); ++b) {
      char ms[32];
      std::snprintf(ms, sizeof ms, " %.1f", 1000 * costs.last_seconds[b]);
      last_text += ms;
    }
    cost_text += "; in the last stage, which runs no rebuild:" + last_text;
  }
  char balance[160];
  std::snprintf(balance, sizeof balance,
                "the busiest stage %.1f ms per micro-batch, the mean %.1f ms (at most %.2f× one stage)",
                1000 * busiest, 1000 * total / stages, total / busiest);
  std::vector<std::string> lines = {
      "pipeline.stages " + std::to_string(stages) + ": blocks per stage [" + cut_text +
          "] by measured cost (ms per micro-batch of each block on " + std::to_string(threads) + " thread" +
          (threads == 1 ? "" : "s") + ": " + cost_text + ")",
      std::string("  ") + balance};
  if (c.pipeline.threads.empty()) {
    std::string split = split_threads_by_cost(c, per_stage, threads, cores);
    if (!split.empty()) lines.push_back("  " + split);
  }
  return lines;
}

}  // namespace petra

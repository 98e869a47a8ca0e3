// pipeline.stages without pipeline.stage_blocks: the model cut into that many stages by measured
// cost, so that the busiest stage (the one the pipeline runs at) is as light as a cut can make it.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace petra {

/// Cuts blocks of `costs` (in model order) into `stages` consecutive non-empty groups whose largest
/// sum is the smallest any such cut has; of equal cuts, the one whose later groups are smallest.
/// The last group sums `last_costs` instead where given (the blocks' costs in the last stage, which
/// runs no rebuild). A function of its arguments only. Throws std::invalid_argument when stages is
/// not in 1..costs or last_costs is neither empty nor as long as costs.
std::vector<int> partition_by_cost(const std::vector<double>& costs, int stages,
                                   const std::vector<double>& last_costs = {});

/// Splits `cores` over stages whose compute seconds per micro-batch on `measured_threads` threads
/// each are `costs`, so that the slowest stage is as fast as whole threads make it: each stage starts
/// with 1 and every further core goes to the stage predicted slowest (cost × measured_threads /
/// threads: a stage's time taken as inversely proportional to its threads; the earlier stage on a
/// tie). Sums to max(cores, stages). A function of its arguments only.
std::vector<int> split_cores_by_cost(const std::vector<double>& costs, int cores, int measured_threads);

/// Each block's compute seconds per micro-batch, in model order.
struct block_costs {
  std::vector<double> seconds;       // in a stage before the last: forward, rebuild, backward and step
  std::vector<double> last_seconds;  // in the last stage, whose backward follows its taped forward
};

/// The blocks' costs as stages run them: the model one block per stage on stage 1's device with
/// `threads` compute threads, through the simulator, `micro_batches` random micro-batches timed after
/// `warm_up` untimed ones (the first creates the kernels' plans and the pools' blocks); then each
/// block's forward alone on as many, which a last stage that tapes its forward does not run again
/// (last_seconds = seconds − that forward, for the methods whose last stage tapes it).
block_costs measure_block_costs(const config::run_config& c, int threads, int micro_batches, int warm_up);

/// With pipeline.stages set and pipeline.stage_blocks empty: measures the blocks, sets stage_blocks
/// to the cut by cost and clears pipeline.stages; with pipeline.threads empty too and more cores
/// than CPU stages, sets it to this machine's cores split over the CPU stages by the same costs
/// (split_cores_by_cost; other stages 1). The run directory's config.yaml then repeats both. Returns the
/// lines to print about it; nothing otherwise.
std::vector<std::string> resolve_measured_partition(config::run_config& c);

}  // namespace petra

// pipeline.stages without pipeline.stage_blocks: the model cut into that many stages by measured
// cost, so that the busiest stage (the one the pipeline runs at) is as light as a cut can make it.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace petra {

/// Cuts blocks of `costs` (in model order) into `stages` consecutive non-empty groups whose largest
/// sum is the smallest any such cut has; of equal cuts, the one whose later groups are smallest.
/// A function of its arguments only. Throws std::invalid_argument when stages is not in 1..costs.
std::vector<int> partition_by_cost(const std::vector<double>& costs, int stages);

/// Each block's compute seconds per micro-batch (forward, rebuild and backward with its optimizer
/// step, as a stage runs them): the model one block per stage on stage 1's device with
/// `threads` compute threads, through the simulator, `micro_batches` random micro-batches timed after
/// as many for warm-up.
std::vector<double> measure_block_costs(const config::run_config& c, int threads, int micro_batches);

/// With pipeline.stages set and pipeline.stage_blocks empty: measures the blocks, sets stage_blocks
/// to the cut by cost and clears pipeline.stages (the run directory's config.yaml then repeats the
/// cut), and returns the lines to print about it; nothing otherwise.
std::vector<std::string> resolve_measured_partition(config::run_config& c);

}  // namespace petra

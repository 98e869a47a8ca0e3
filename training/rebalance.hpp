// Online rebalancing (pipeline.rebalance): at each drained point of the run one block may move from
// the busiest stage to a neighbour, by the measured rule or as testing.rebalance_moves forces.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "training/checkpoint.hpp"

namespace petra {

/// One block moving between neighbouring stages (stages 0-based; `block` counts the model's blocks
/// from the stem, 0).
struct rebalance_move {
  int from = 0;
  int to = 0;
  int block = 0;
  std::vector<int> before, after;  // blocks per stage
  std::vector<double> busy;        // each stage's measured busy seconds since the previous point
  std::vector<double> predicted;   // the rule's expected busy seconds after the move (empty: forced)
  bool forced = false;
};

/// `sizes` with the block of stage `from` next to stage `to` moved there. Throws
/// std::invalid_argument when the stages are not neighbours or `from` would be left without a block.
rebalance_move move_block(const std::vector<int>& sizes, int from, int to);

/// The measured rule. Stage s is the busiest (the first of equals); each of its blocks is taken to
/// cost busy[s] / sizes[s]. Moving its block next to neighbour n predicts busy[s] − c and busy[n] + c;
/// the neighbour with the lower predicted busiest time is taken (the earlier stage on a tie), and only
/// when that time is below (1 − margin)·busy[s]. None when s holds one block or nothing was measured.
/// A function of its arguments only: the same measured times give the same move.
std::optional<rebalance_move> choose_move(const std::vector<int>& sizes, const std::vector<double>& busy,
                                          double margin);

/// Whether the run drains before micro-batch `g` of the run for rebalancing (g in 1 .. end − 1):
/// every output.checkpoint_every_steps optimizer steps (counted from each epoch's start when
/// training.drain_at_epoch_end, else from the run's) and every epoch end.
bool is_rebalance_point(const config::run_config& c, int64_t per_epoch, int64_t g);

/// Checks testing.rebalance_moves against the run: each at a point inside it, each a move the
/// partition before it allows. Throws config::config_error naming the entry.
void check_forced_moves(const config::run_config& c, std::size_t block_count, int64_t per_epoch);

class rebalancer {
 public:
  explicit rebalancer(const config::run_config& c);
  /// At the drained point before micro-batch `position` of the run, with stages of `sizes` blocks
  /// that were busy `busy` seconds since the previous point: the move to make, if any. With forced
  /// moves, those (at their positions) and nothing else.
  std::optional<rebalance_move> decide(int64_t position, const std::vector<int>& sizes,
                                       const std::vector<double>& busy) const;

 private:
  double margin_;
  std::vector<config::block_move> forced_;
};

/// The `{"event":"rebalance"}` line of a move made at the point before micro-batch `position` of the
/// run, after `ticks` ticks of the run's phases, `seconds` into the run on the step lines' clock
/// (stages and blocks 1-based there, as everywhere in metrics.jsonl: block 1 is the stem).
nlohmann::json rebalance_line(const rebalance_move& m, int64_t position, int64_t ticks, double seconds);

/// A checksum (64-bit FNV-1a, as state_checksum) of the model's whole state whatever its cut: every
/// stage's tensors (weights, momentum, BN statistics) by name, shape and bytes, in name order. A
/// move changes where the tensors are, never this.
uint64_t model_checksum(const std::vector<stage_snapshot>& stages);

/// The checksum as the metrics lines write it: 16 hex digits.
std::string checksum_text(uint64_t checksum);

/// The partition a checkpoint was written with (metadata stage_blocks), empty when it says none.
std::vector<int> checkpoint_partition(const checkpoint& from);

/// The stage states of `from` for a pipeline cut as `sizes`: as written when the checkpoint was cut
/// the same way (or says nothing), else every stage is offered every tensor and takes its own by
/// name (the block's weights, momentum and BN statistics travel with it).
std::vector<stage_snapshot> stages_for(const checkpoint& from, const std::vector<int>& sizes);

}  // namespace petra

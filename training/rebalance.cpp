// Online rebalancing: the rule, the forced moves and the restore of a checkpoint into another cut.
#include "training/rebalance.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>
#include <string>

#include "training/migration.hpp"

namespace petra {
namespace {

std::string list(const std::vector<int>& sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) out += (i ? "," : "") + std::to_string(sizes[i]);
  return out + "]";
}

}  // namespace

rebalance_move move_block(const std::vector<int>& sizes, int from, int to) {
  const int count = static_cast<int>(sizes.size());
  if (from < 0 || to < 0 || from >= count || to >= count || std::abs(from - to) != 1)
    throw std::invalid_argument("stages " + std::to_string(from + 1) + " and " + std::to_string(to + 1) +
                                " of " + std::to_string(count) + " are not neighbours");
  if (sizes[from] < 2)
    throw std::invalid_argument("stage " + std::to_string(from + 1) + " of the partition " + list(sizes) +
                                " holds one block: a stage keeps at least one");
  rebalance_move m;
  m.from = from;
  m.to = to;
  m.before = sizes;
  m.after = sizes;
  --m.after[from];
  ++m.after[to];
  const int first = std::accumulate(sizes.begin(), sizes.begin() + from, 0);
  m.block = to < from ? first : first + sizes[from] - 1;  // the block on the boundary with `to`
  return m;
}

std::optional<rebalance_move> choose_move(const std::vector<int>& sizes, const std::vector<double>& busy,
                                          double margin) {
  if (busy.size() != sizes.size() || sizes.size() < 2) return std::nullopt;
  const int s = static_cast<int>(std::max_element(busy.begin(), busy.end()) - busy.begin());
  if (!(busy[s] > 0) || sizes[s] < 2) return std::nullopt;
  const double cost = busy[s] / sizes[s];
  std::optional<rebalance_move> best;
  double best_max = busy[s] * (1 - margin);  // a move must come in below this
  for (int n : {s - 1, s + 1}) {
    if (n < 0 || n >= static_cast<int>(sizes.size())) continue;
    std::vector<double> predicted = busy;
    predicted[s] -= cost;
    predicted[n] += cost;
    const double top = *std::max_element(predicted.begin(), predicted.end());
    if (top < best_max) {
      best_max = top;
      best = move_block(sizes, s, n);
      best->predicted = predicted;
    }
  }
  if (best) best->busy = busy;
  return best;
}

bool is_rebalance_point(const config::run_config& c, int64_t per_epoch, int64_t g) {
  const int64_t size = static_cast<int64_t>(c.output.checkpoint_every_steps) * c.training.accumulation;
  // Drained at every epoch end, the checkpoint points count again from each epoch's start (as the
  // trainer's phases end); else from the run's.
  const int64_t counted = c.training.drain_at_epoch_end && per_epoch > 0 ? g % per_epoch : g;
  return g > 0 && ((size > 0 && counted % size == 0) || (per_epoch > 0 && g % per_epoch == 0));
}

void check_forced_moves(const config::run_config& c, std::size_t block_count, int64_t per_epoch) {
  const auto& moves = c.testing.rebalance_moves;
  if (moves.empty()) return;
  std::vector<int> sizes = c.pipeline.stage_blocks;
  if (sizes.empty()) sizes.assign(block_count, 1);
  const int64_t end = c.training.epochs * per_epoch;
  const std::string where = config::where(c, "testing.rebalance_moves");
  for (std::size_t i = 0; i < moves.size(); ++i) {
    const std::string entry =
        "testing.rebalance_moves " + where + ": entry " + std::to_string(i) + " (" + moves[i].str() + ") ";
    if (moves[i].position >= end || !is_rebalance_point(c, per_epoch, moves[i].position))
      throw config::config_error(
          entry + "is not a rebalancing point of this run: the points are the multiples of " +
          "output.checkpoint_every_steps × training.accumulation (" +
          std::to_string(static_cast<int64_t>(c.output.checkpoint_every_steps) * c.training.accumulation) +
          " micro-batches; 0 = none), counted from each epoch's start with training.drain_at_epoch_end, and "
          "the epoch ends (every " +
          std::to_string(per_epoch) + " micro-batches), before micro-batch " + std::to_string(end) +
          ", the run's end");
    try {
      sizes = move_block(sizes, moves[i].from - 1, moves[i].to - 1).after;
    } catch (const std::invalid_argument& e) {
      throw config::config_error(entry + "cannot be made: " + e.what());
    }
  }
}

rebalancer::rebalancer(const config::run_config& c)
    : margin_(c.pipeline.rebalance_margin), forced_(c.testing.rebalance_moves) {}

std::optional<rebalance_move> rebalancer::decide(int64_t position, const std::vector<int>& sizes,
                                                 const std::vector<double>& busy) const {
  if (forced_.empty()) return choose_move(sizes, busy, margin_);
  for (const config::block_move& m : forced_)
    if (m.position == position) {
      rebalance_move out = move_block(sizes, m.from - 1, m.to - 1);
      out.busy = busy;
      out.forced = true;
      return out;
    }
  return std::nullopt;
}

nlohmann::json rebalance_line(const rebalance_move& m, int64_t position, int64_t ticks, double seconds) {
  nlohmann::json line = {
      {"event", "rebalance"},    {"position", position},   {"seconds", seconds},
      {"tick", ticks},           {"block", m.block + 1},   {"from", m.from + 1},
      {"to", m.to + 1},          {"busy_seconds", m.busy}, {"stage_blocks_before", m.before},
      {"stage_blocks", m.after}, {"forced", m.forced}};
  if (!m.predicted.empty()) line["predicted_busy_seconds"] = m.predicted;
  return line;
}

uint64_t model_checksum(const std::vector<stage_snapshot>& stages) {
  std::vector<named_tensor> all;
  for (const stage_snapshot& s : stages) all.insert(all.end(), s.tensors.begin(), s.tensors.end());
  std::sort(all.begin(), all.end(),
            [](const named_tensor& a, const named_tensor& b) { return a.name < b.name; });
  return state_checksum(all, "");
}

std::string checksum_text(uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

std::vector<int> checkpoint_partition(const checkpoint& from) {
  const auto it = from.metadata.find("stage_blocks");
  if (it == from.metadata.end()) return {};
  try {
    return nlohmann::json::parse(it->second).get<std::vector<int>>();
  } catch (const std::exception&) {
    throw std::runtime_error("checkpoint '" + from.path +
                             "': metadata stage_blocks is not a list of integers");
  }
}

std::vector<stage_snapshot> stages_for(const checkpoint& from, const std::vector<int>& sizes) {
  const std::vector<int> written = checkpoint_partition(from);
  if (written.empty() || written == sizes) return from.stages;
  std::vector<named_tensor> all;
  for (const stage_snapshot& s : from.stages) all.insert(all.end(), s.tensors.begin(), s.tensors.end());
  std::vector<stage_snapshot> out = from.stages;
  for (stage_snapshot& s : out) s.tensors = all;  // tensors are handles: no copies of the values
  return out;
}

}  // namespace petra

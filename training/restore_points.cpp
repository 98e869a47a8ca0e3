// Where a run can restart from.
#include "training/restore_points.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "training/checkpoint.hpp"
#include "training/setup.hpp"
#include "training/snapshot.hpp"

namespace petra {

restore_points::restore_points(prepared_run& p, const train_options& options, run_dir& dir)
    : p_(p), options_(options), dir_(dir) {}

int64_t restore_points::phase_end(int64_t g, int64_t end) const {
  const config::run_config& cfg = p_.cfg;
  const int64_t per_epoch = p_.per_epoch;
  const int64_t epoch_end = (g / per_epoch + 1) * per_epoch;
  int64_t next = end;
  if (cfg.output.checkpoint_every_steps > 0 && !p_.runtime->takes_cuts()) {
    const int64_t size = static_cast<int64_t>(cfg.output.checkpoint_every_steps) * cfg.training.accumulation;
    next = waves() ? (g / size + 1) * size
                   : std::min(epoch_end, epoch_end - per_epoch + ((g % per_epoch) / size + 1) * size);
  }
  // Rebalancing moves blocks where the pipeline drains: at epoch ends too.
  if (!waves() || cfg.pipeline.rebalance) next = std::min(next, epoch_end);
  // --stop-after-epoch: the phase that reaches it ends there, whichever epoch it starts in.
  const int64_t stop = static_cast<int64_t>(options_.stop_after_epoch) * per_epoch;
  if (options_.stop_after_epoch > 0 && stop > g) next = std::min(next, stop);
  for (const config::stage_migration& m : cfg.pipeline.migrate)  // a stage moves where the pipeline drains
    if (m.position > g) {
      next = std::min(next, m.position);
      break;
    }
  return std::min(next, end);
}

std::vector<int64_t> restore_points::cuts_in(int64_t g, int64_t next) const {
  std::vector<int64_t> out;
  if (!p_.runtime->takes_cuts()) return out;
  const int64_t size =
      static_cast<int64_t>(p_.cfg.output.checkpoint_every_steps) * p_.cfg.training.accumulation;
  for (int64_t at = g + 1; at < next; ++at)
    if ((size > 0 && at % size == 0) || (waves() && at % p_.per_epoch == 0)) out.push_back(at - g);
  return out;
}

void restore_points::snapshot(const phase_request& phase, int64_t index, const pipeline_cut& cut) {
  const int64_t g = (phase.epoch - 1) * p_.per_epoch + phase.first + index;
  const int epoch = static_cast<int>((g - 1) / p_.per_epoch) + 1;  // the epoch g ends or lies in
  write_snapshot(dir_.path(), "step-" + std::to_string(g), cut,
                 {{"epoch", std::to_string(epoch)},
                  {"position", std::to_string(g - (epoch - 1) * p_.per_epoch)},
                  {"global_position", std::to_string(g)},
                  {"phase_epoch", std::to_string(phase.epoch)},
                  {"phase_first", std::to_string(phase.first)},
                  {"phase_count", std::to_string(phase.count)},
                  {"method", p_.method.str()}});
  last_snapshot_ = g;
  if (++written_ == options_.stop_after_snapshots) throw stopped_at_snapshot{g};
}

restored_stage restore_points::stage_state(std::size_t j) const {
  const std::size_t J = stage_sizes(p_.cfg).size();
  if (last_snapshot_ >= 0 || p_.resume_cut)
    return {read_snapshot(dir_.path(), J).cut->stages.at(j).state, "snapshot"};
  return {read_checkpoint(dir_.file("checkpoint.safetensors"), J).stages.at(j), "checkpoint"};
}

void restore_points::checkpoint(int epoch, int64_t position) {
  write_checkpoint(dir_.file("checkpoint.safetensors"), p_.runtime->snapshot(),
                   {{"epoch", std::to_string(epoch)},
                    {"position", std::to_string(position)},
                    {"method", p_.method.str()},
                    {"stage_blocks", nlohmann::json(stage_sizes(p_.cfg)).dump()},
                    {"config", config::to_yaml(p_.cfg)}});
}

}  // namespace petra

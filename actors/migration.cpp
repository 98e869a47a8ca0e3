// Live migration: the new stage actor is built before anything changes, so a target that cannot be
// had leaves the pipeline as it was; then the swap, the rewiring and the state.
#include "actors/migration.hpp"

#include <chrono>

#include "actors/stage_actor.hpp"
#include "training/migration.hpp"
#include "training/runtime_support.hpp"
#include "training/setup.hpp"

namespace petra {

using namespace messages;
using namespace atoms;

namespace {

std::string stage_name(std::size_t j) { return "stage " + std::to_string(j + 1); }

}  // namespace

// Each forward, backward and evaluation batch a stage ran is one message on its link: equal counts
// at both ends of every link mean nothing is left on it.
void require_links_empty(control_channel& control, const std::vector<stage_actor>& stages, bool async) {
  const std::vector<stage_status> status =
      control.gather<stage_status>(stages, control_timeout, status_atom_v);
  auto counts = [](const stage_status& s) {
    return std::to_string(s.tick) + " forwards (ticks), " + std::to_string(s.backwards) + " backwards, " +
           std::to_string(s.evals) + " evaluation batches";
  };
  for (std::size_t j = 0; j < status.size(); ++j) {
    const stage_status& s = status[j];
    std::string why;
    if (s.in_phase)
      why = stage_name(j) + " is still in its phase";
    else if (async && s.tick != s.backwards)
      why = stage_name(j) + " ran " + counts(s) + ": micro-batches are still on their way";
    else if (j > 0 && (s.tick != status[j - 1].tick || s.backwards != status[j - 1].backwards ||
                       s.evals != status[j - 1].evals))
      why = stage_name(j - 1) + " ran " + counts(status[j - 1]) + ", " + stage_name(j) + " " + counts(s) +
            ": their links still carry messages";
    if (!why.empty()) throw migration_refused("the pipeline is not drained: " + why);
  }
}

void actor_pipeline::migrate(int32_t j, const config::migration_target& to) {
  const auto i = static_cast<std::size_t>(j);
  const auto count = static_cast<int32_t>(stages_.size());
  const config::run_config before = config_;
  stage_actor fresh;
  std::string where;
  try {
    config_ = placed_at(config_, i, to);
    where = config::resolve_node_address(config_, to.node);
    if (where == "local") {
      auto placed = build_placed_stages(
          config_, optimizer_, [&](std::size_t k) { return k == i; }, sim_);
      fresh = spawn_stage_actor(control_.self()->system(),
                                make_stage_context(config_, placed[i], j, count, trace_, "coordinator"));
    } else {
      fresh = spawn_remote_stage(where, j);
    }
  } catch (const std::exception& e) {
    config_ = before;
    throw migration_refused("stage " + std::to_string(j + 1) + " cannot be placed at " + to.str() + ": " +
                            e.what());
  }
  const stage_actor old = stages_[i];
  control_.unwatch(old.address());  // its down, when it comes, is no failure
  placement_[i] = where;
  stage_generation_[i] = ++newest_generation_;  // what the old one might still send is fenced
  stages_[i] = fresh;
  control_.watch_extra(fresh.address(), j);
  control_.monitor(fresh);
  place_nodes();
  control_.ask<faults_atom>(fresh, control_timeout, faults_atom_v, faults_of(j));
  rewire(j);
  if (j > 0) rewire(j - 1);
  if (j + 1 < count) rewire(j + 1);
  // The loss actor answers the last stage, and with forward gradients sends every stage its derivatives.
  if (j + 1 == count || config_.training.method == config::training_method::forward_gradient) rewire_loss();
  if (j == 0) rewire_loader();
  control_.self()->send_exit(old, caf::exit_reason::user_shutdown);
}

migration_done migrate_stage(actor_pipeline& pipeline, control_channel& control, config::run_config& config,
                             std::size_t j, const config::migration_target& to, bool prove_drained) {
  if (const std::string why = why_not_migrated(config); !why.empty()) throw migration_refused(why);
  if (prove_drained)
    require_links_empty(control, pipeline.stages(), config.runtime.mode == config::runtime_mode::async);
  const auto t0 = std::chrono::steady_clock::now();
  migration_done out;
  out.from = placement_of(config, j).str();
  out.to = to.str();
  // Its whole state as a cut's part: weights, momentum, BN buffers, optimizer steps, and what a
  // drained stage may still hold (kept inputs, accumulated gradients, its record, the fallback's
  // mode and window; with forward gradients its auxiliary head).
  const cut_part state = control.ask<cut_part>(pipeline.stages()[j], control_timeout, migrate_atom_v);
  for (const named_tensor& t : state.tensors) out.bytes += static_cast<int64_t>(t.value.bytes());
  out.checksum = state_checksum(state.tensors, state.meta);
  // The actor's own clocks and counters of the running epoch (busy seconds, mailbox peak, messages
  // upstream, the epoch's clock) go on in the new actor too; its record of computations travels
  // in the state above, so none of that is carried twice.
  stage_report clocks = control.ask<stage_report>(pipeline.stages()[j], control_timeout, report_atom_v);
  clocks.stats = {};
  const auto kept_at = std::chrono::steady_clock::now();
  pipeline.migrate(static_cast<int32_t>(j), to);
  config = placed_at(config, j, to);
  control.ask<restore_atom>(pipeline.stages()[j], control_timeout, restore_atom_v, state);
  clocks.wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - kept_at).count();
  control.ask<restore_atom>(pipeline.stages()[j], control_timeout, restore_atom_v, clocks);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // What the new actor holds now, taken as the old one's was: the same bytes, or the move lost something.
  const cut_part held = control.ask<cut_part>(pipeline.stages()[j], control_timeout, migrate_atom_v);
  out.restored_checksum = state_checksum(held.tensors, held.meta);
  return out;
}

}  // namespace petra

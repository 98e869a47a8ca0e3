// A stage actor's state for a live migration, taken only where it holds nothing of a phase.
#include "actors/stage_migration.hpp"

#include <stdexcept>
#include <string>

#include "training/snapshot.hpp"

namespace petra::detail {
namespace {

/// Throws naming what a stage that should be drained still holds (`what` empty: nothing).
void require_drained(const stage_core& c, const std::string& what) {
  std::string held = what;
  auto add = [&](bool holds, const std::string& thing) {
    if (holds) held += (held.empty() ? "" : ", ") + thing;
  };
  add(c.in_phase, "a running phase");
  add(c.awaiting_loss, "an output awaiting the loss");
  add(!c.early_forward.empty() || !c.early_backward.empty(), "messages of a phase not planned yet");
  add(c.ctx.fg && c.ctx.fg->held() > 0, "forward-gradient guesses awaiting their derivatives");
  if (held.empty()) return;
  throw std::logic_error("asked for its state while it holds " + held +
                         ": a stage moves only where the pipeline is drained");
}

/// The part itself: the stage's cut with its auxiliary head, if it has one.
cut_part part_of(const stage_core& c, stage_cut cut) {
  if (c.ctx.fg) c.ctx.fg->save(cut.state);  // aux/param, aux/momentum, aux/buffer
  encoded_stage_cut e = encode_stage_cut(cut);
  return cut_part{c.ctx.index, 0, c.plan.phase, std::move(e.tensors), std::move(e.meta)};
}

}  // namespace

cut_part migration_part(lockstep_state& st) {
  stage_core& c = st.core;
  const bool queued = !st.forwards.empty() || !st.backwards.empty() || !st.derivatives.empty() ||
                      !st.early_derivatives.empty();
  require_drained(c, queued ? "queued messages" : "");
  return part_of(c, cut_stage(*c.ctx.compute, *c.ctx.device));
}

cut_part migration_part(async_state& st) {
  stage_core& c = st.core;
  std::string what;
  if (!st.forwards.empty() || !st.backwards.empty() || !st.derivatives.empty()) what = "queued messages";
  if (!st.cuts.empty()) what += std::string(what.empty() ? "" : ", ") + "a snapshot's pending part";
  require_drained(c, what);
  stage_cut cut = cut_stage(*c.ctx.compute, *c.ctx.device);
  cut.async.present = true;  // nothing queued, nothing recorded: a new phase starts from none
  return part_of(c, std::move(cut));
}

}  // namespace petra::detail

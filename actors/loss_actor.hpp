// The loss actor: softmax cross-entropy on the last stage's logits, dlogits back to it, and the
// training metrics. Labels come from the loader, keyed by micro-batch; logits that arrive first
// wait for theirs.
#pragma once

#include <caf/actor_system.hpp>
#include <memory>

#include "compute/backend.hpp"
#include "messages/interfaces.hpp"
#include "training/trace_recorder.hpp"

namespace petra {

/// The loss actor computing on `device`; once wired, it sends the coordinator a loss_report of the
/// phase so far every `progress_every` micro-batches (0 = never). `trace` (may be null) gets its
/// track of the timeline; the pipeline has `stages` stages (its flows' numbering).
messages::loss_actor spawn_loss_actor(caf::actor_system& sys, std::shared_ptr<backend> device,
                                      int64_t progress_every,
                                      std::shared_ptr<training::trace_recorder> trace = nullptr,
                                      int32_t stages = 1);

}  // namespace petra

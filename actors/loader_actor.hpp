// The data-loader actor: feeds one phase of an epoch to the first stage (images) and to the
// loss actor (labels), one micro-batch per credit. It is the source of back-pressure: the first
// stage returns a credit per tick (lockstep) or per finished micro-batch (async), so at most
// `credits` micro-batches are ever in flight and no mailbox grows.
#pragma once

#include <caf/actor_system.hpp>
#include <memory>

#include "config/config.hpp"
#include "messages/interfaces.hpp"
#include "training/data_feed.hpp"
#include "training/trace_recorder.hpp"

namespace petra {

/// `feed` gives the training micro-batches, `waves` the test set for the evaluation waves; `mode`
/// is lockstep (one message per tick, markers included) or async (a message per micro-batch or
/// evaluation batch); `labels_to_stages`: each training micro-batch's labels go beside its images
/// to stage 1 as well (forward gradients' auxiliary heads need them; the loss actor gets its own);
/// `trace` (may be null) gets the loader's track of the timeline.
messages::loader_actor spawn_loader_actor(caf::actor_system& sys, std::shared_ptr<data_feed> feed,
                                          std::shared_ptr<data_feed> waves, config::runtime_mode mode,
                                          bool labels_to_stages,
                                          std::shared_ptr<training::trace_recorder> trace = nullptr);

}  // namespace petra

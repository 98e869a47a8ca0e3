// Two small units of a stage's state (private to actors/), each with its own rules and no actor
// system: the phase (the plan the coordinator sent, where the stage is in it, what it has passed
// on and reported) and, at the last stage, the forward output whose loss it awaits.
// Tested in tests/actors/stage_units_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "compute/parameter.hpp"
#include "messages/messages.hpp"

namespace petra::detail {

struct stage_phase {
  messages::phase_plan plan;
  bool running = false;
  int64_t tick = 0;             // lockstep: the next tick to run; async: forwards done
  int64_t last_forwarded = -1;  // the highest training micro-batch id this stage forwarded
  int64_t backwards = 0;        // backwards run in this phase
  int64_t evals = 0;            // evaluation batches of this phase this stage passed on
  int32_t epoch_reported = -1;  // the phase's latest epoch this stage reported

  /// Starts phase `p` from zero.
  void begin(const messages::phase_plan& p) {
    plan = p;
    running = true;
    tick = 0;
    last_forwarded = -1;
    backwards = 0;
    evals = 0;
    epoch_reported = -1;
  }
  /// Injected faults apply to a phase's first attempt only.
  bool faults_on() const { return plan.attempt == 0; }
  /// The epoch whose end the backward of micro-batch `id` makes, the first time only (a re-issue of
  /// an epoch's last micro-batch, lost after its backward here, ends nothing again); none else.
  std::optional<int32_t> epoch_ended_by(int64_t id) {
    const int64_t per_epoch = plan.per_epoch;
    if (per_epoch <= 0 || (id + 1) % per_epoch != 0 || id / per_epoch <= epoch_reported) return std::nullopt;
    epoch_reported = static_cast<int32_t>(id / per_epoch);
    return epoch_reported;
  }
  /// Async: every micro-batch of the phase passed this stage's backward, every evaluation batch its
  /// evaluation.
  bool all_passed() const { return backwards >= plan.micro_batches && evals >= plan.eval_items; }
};

/// The last stage's forward output, sent to the loss actor, until the loss's gradient answers it.
struct loss_wait {
  bool awaiting = false;
  activation logits;
  int64_t id = -1;

  void hold(activation y, int64_t micro_batch) {
    logits = std::move(y);
    id = micro_batch;
    awaiting = true;
  }
  /// Whether a loss gradient for `micro_batch` is the one awaited.
  bool answered_by(int64_t micro_batch) const { return awaiting && micro_batch == id; }
  /// Given up (the micro-batch was lost, or the tick skipped): nothing awaited.
  void drop() {
    awaiting = false;
    logits = activation{};
    id = -1;
  }
};

}  // namespace petra::detail

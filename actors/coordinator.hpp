// The coordinator of the actor runtimes: builds the pipeline from the config (stage, loss and
// loader actors), wires the peers, monitors every actor, runs phases to their drained end,
// evaluates, checkpoints, and turns any lost actor or stage failure into a clear error.
#pragma once

#include <memory>

#include "actors/trainer.hpp"
#include "compute/optimizer.hpp"
#include "config/config.hpp"

namespace petra {

/// A failure of the run: which stage (-1 = none in particular), at which tick, what.
class run_error : public std::runtime_error {
 public:
  run_error(int32_t stage, int64_t tick, const std::string& what);
  int32_t stage() const { return stage_; }
  int64_t tick() const { return tick_; }

 private:
  int32_t stage_;
  int64_t tick_;
};

/// The lockstep or async actor runtime (runtime.mode) in this process.
std::unique_ptr<trainer> make_actor_trainer(const config::run_config& c, training_data& data,
                                            const optimizer_settings& optimizer);

}  // namespace petra

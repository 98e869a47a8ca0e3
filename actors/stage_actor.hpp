// The stage actor: one compute stage and its device context behind the stage interface.
//  lockstep: tick t runs when the forward input and the backward input for t are both there
//            (empty markers during fill and drain); forward, then backward (training.tick_order:
//            backward_first, the other way round, but for the last stage); everything it sends
//            at tick t is for tick t + 1. No barrier: the clock is the data flow.
//  async:    messages are handled as they arrive, backward first; the first stage returns one
//            credit to the loader per finished micro-batch.
#pragma once

#include <caf/actor_system.hpp>
#include <memory>

#include "compute/pipeline/stage.hpp"
#include "config/config.hpp"
#include "messages/interfaces.hpp"
#include "training/forward_gradient_stage.hpp"
#include "training/setup.hpp"
#include "training/trace_recorder.hpp"

namespace petra {

/// Everything a stage actor owns. Shared pointers because CAF copies spawn arguments.
struct stage_context {
  std::shared_ptr<backend> device;
  std::shared_ptr<stage> compute;
  int32_t index = 0;
  config::runtime_mode mode = config::runtime_mode::lockstep;  // lockstep or async
  std::shared_ptr<training::trace_recorder> trace{};  // this process's timeline (output.trace) or null
  std::string process = "coordinator";                // the timeline's name of this process
  int metrics_every = 0;     // a window_report every N optimizer steps (output.metrics_every_steps); 0 = none
  int64_t stage_window = 0;  // async: starts a training forward only while fewer await backward; 0 = no bound
  bool backward_first = false;  // lockstep, training.tick_order: a tick's backward before its forward
  std::shared_ptr<forward_gradient_stage> fg{};  // training.method forward_gradient: the stage's share
  int64_t fg_link_delay = 0;  // lockstep forward_gradient: ticks injected on its derivatives' round trip
  std::vector<int> cores{};   // runtime.pin_threads: the cores its compute threads are pinned to, when wired
  // An OS thread of its own (every stage computes while the others do); false only under CAF's
  // deterministic test scheduler, which runs scheduled actors alone.
  bool own_thread = true;
};

/// The context of stage j of `count`, built as `placed` from config `c`: one recipe for every process
/// that spawns a stage (the coordinator's, a node's). `trace` is the process's timeline (null when
/// output.trace is off), `process` its name there.
stage_context make_stage_context(const config::run_config& c, const placed_stage& placed, int32_t j,
                                 int32_t count, std::shared_ptr<training::trace_recorder> trace,
                                 std::string process);

/// Spawns the stage actor of `context.mode`, detached (one OS thread of its own, its compute team
/// started from it) unless `context.own_thread` is false.
messages::stage_actor spawn_stage_actor(caf::actor_system& sys, stage_context context);

}  // namespace petra

// The tick arithmetic of docs/design.md §1 every runtime shares: how long a micro-batch takes to come
// back to a stage, and how far apart micro-batches enter the pipeline.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config/config.hpp"
#include "training/method.hpp"

namespace petra {

/// Ticks from a micro-batch's forward at stage j (from 0) of J to its backward there: 2(J−1−j).
int64_t round_trip_ticks(std::size_t j, std::size_t J);

/// Micro-batches stage j (from 0) of J holds awaiting their backward at the peak of the tick
/// schedule: those of its round trip and the one entering, 2(J−1−j) + 1. Async pacing by stages
/// bounds each stage by it.
int64_t fifo_window(std::size_t j, std::size_t J);

/// forward_gradient (training/forward_gradient.hpp): ticks from stage j's forward to its backward —
/// J − j (0-based j < J − 1: the micro-batch reaches the loss J − 1 − j ticks later, its derivatives
/// arrive the tick after), 0 at the last stage and with a local target.
int64_t forward_gradient_ticks(std::size_t j, std::size_t J, bool local_target);
/// forward_gradient in lockstep: the ticks injected on stage j's round trip to the loss — the forward
/// delays of the links j → … → J and the backward delay of its derivatives (faults.backward_delay[j]);
/// 0 at the last stage and with a local target, whose backward follows its forward in the tick.
int64_t forward_gradient_link_delay(const config::run_config& c, std::size_t j, std::size_t J);

/// Ticks between two micro-batches entering a pipeline of J stages: backprop keeps one micro-batch in
/// flight (its round trip takes 2J − 1 ticks), every other method feeds one per tick.
int64_t entry_spacing(method_kind kind, std::size_t J);

/// Lockstep's injected link delays (faults.forward_delay, faults.backward_delay), in ticks, summed
/// over every link of the pipeline: what a micro-batch's round trip from stage 1 takes longer.
int64_t link_delay_ticks(const config::run_config& c);

/// Ticks between two micro-batches entering the pipeline of `c`: 1, or for backprop, which keeps
/// one micro-batch in flight, its round trip, 2J − 1, plus `link_delays` (link_delay_ticks when the
/// runtime injects them; 0 for simulate and for a replay, which runs clean).
int64_t pipeline_entry_spacing(const config::run_config& c, int64_t link_delays);

/// The micro-batches the loader may have in flight (its credits) in a pipeline of J stages of `c`:
/// 1 for backprop (one in flight), runtime.credits when set, else 2J − 1 (stage 1's round trip and
/// the one entering).
int64_t loader_credits(const config::run_config& c, std::size_t J);

}  // namespace petra

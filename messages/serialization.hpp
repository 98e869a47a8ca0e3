// inspect() overloads: how each message crosses a process boundary. A tensor's payload goes
// as one raw block (one memcpy), never element by element. Host tensors only: a device tensor
// is copied to the host by its stage before it is sent off-node.
#pragma once

#include <caf/deserializer.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/serializer.hpp>

#include "messages/messages.hpp"

namespace petra {

caf::error inspect(caf::serializer& f, tensor& x);
caf::error inspect(caf::deserializer& f, tensor& x);
/// Blocks of pages mapped for received tensors (128 KiB and up) since the process started: a block
/// whose tensor is gone holds the next tensor of its size, which maps none.
uint64_t received_blocks_mapped();

/// For to_string / deep_to_string: shapes only, never millions of floats.
template <class Inspector>
typename std::enable_if<!std::is_base_of<caf::data_processor<caf::serializer>, Inspector>::value &&
                            !std::is_base_of<caf::data_processor<caf::deserializer>, Inspector>::value,
                        typename Inspector::result_type>::type
inspect(Inspector& f, tensor& x) {
  std::string shape = x.defined() ? x.shape_str() : "undefined";
  return f(caf::meta::type_name("tensor"), shape);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, activation& x) {
  return f(caf::meta::type_name("activation"), x.x1, x.x2);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_tangent& x) {
  return f(caf::meta::type_name("stage_tangent"), x.origin, x.direction);
}

inline std::string to_string(device_type type) { return device{type, 0}.str(); }
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device& x) {
  return f(caf::meta::type_name("device"), x.type, x.index);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_stats& x) {
  return f(caf::meta::type_name("stage_stats"), x.forwards, x.backwards, x.delay_ticks, x.staleness_steps,
           x.fifo_peak, x.fifo_peak_bytes, x.stash_peak, x.stash_peak_bytes, x.inversion_samples,
           x.inversion_error_sum, x.inversion_error_max, x.fallback_forwards, x.fallback_switches,
           x.rebuilds_ahead);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_report& x) {
  return f(caf::meta::type_name("stage_report"), x.stage, x.weight_version, x.stats, x.mailbox_peak,
           x.busy_seconds, x.phase_busy_seconds, x.wall_seconds, x.wait_input_seconds,
           x.wait_gradient_seconds, x.device_bytes, x.upstream_messages, x.upstream_bytes, x.fault_events);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, named_tensor& x) {
  return f(caf::meta::type_name("named_tensor"), x.name, x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_snapshot& x) {
  return f(caf::meta::type_name("stage_snapshot"), x.stage, x.optimizer_steps, x.tensors);
}

namespace messages {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stamp& x) {
  return f(caf::meta::type_name("stamp"), x.micro_batch, x.tick, x.weight_version, x.sender, x.phase,
           x.generation);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, forward_data& x) {
  return f(caf::meta::type_name("forward_data"), x.s, x.x, x.eval_epoch, x.eval_index, x.eval_x, x.labels,
           x.tangents);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, backward_data& x) {
  return f(caf::meta::type_name("backward_data"), x.s, x.rebuilt, x.grad);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, labels_data& x) {
  return f(caf::meta::type_name("labels_data"), x.micro_batch, x.labels, x.eval_epoch);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, logits_data& x) {
  return f(caf::meta::type_name("logits_data"), x.s, x.logits, x.eval_epoch, x.tangents);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, derivatives_data& x) {
  return f(caf::meta::type_name("derivatives_data"), x.s, x.stage, x.per_sample);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, loss_data& x) {
  return f(caf::meta::type_name("loss_data"), x.s, x.dlogits, x.loss, x.correct, x.samples);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, credit_return& x) {
  return f(caf::meta::type_name("credit_return"), x.count, x.phase, x.micro_batch);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cut_marker& x) {
  return f(caf::meta::type_name("cut_marker"), x.tick, x.from_loader);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, eval_data& x) {
  return f(caf::meta::type_name("eval_data"), x.batch, x.x, x.calibrate);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, phase_plan& x) {
  return f(caf::meta::type_name("phase_plan"), x.epoch, x.micro_batches, x.ticks, x.first_micro_batch,
           x.spacing, x.attempt, x.generation, x.phase, x.per_epoch, x.eval_items, x.cut_ticks, x.start_tick,
           x.in_flight);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cut_part& x) {
  return f(caf::meta::type_name("cut_part"), x.stage, x.tick, x.phase, x.tensors, x.meta);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_faults& x) {
  return f(caf::meta::type_name("stage_faults"), x.forward_delay, x.backward_delay, x.in_forward_delay,
           x.in_backward_delay, x.jitter_ms, x.drop, x.duplicate, x.reorder, x.slow, x.crash_at_tick,
           x.drop_burst, x.drop_burst_at_tick, x.seed);
}
inline std::string to_string(fault_kind kind) { return std::to_string(static_cast<int>(kind)); }
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fault_event& x) {
  return f(caf::meta::type_name("fault_event"), x.stage, x.kind, x.generation);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, loss_report& x) {
  return f(caf::meta::type_name("loss_report"), x.micro_batches, x.samples, x.correct, x.loss_sum);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, failure_report& x) {
  return f(caf::meta::type_name("failure_report"), x.stage, x.tick, x.micro_batch, x.code, x.what,
           x.generation);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_status& x) {
  return f(caf::meta::type_name("stage_status"), x.stage, x.in_phase, x.tick, x.completed, x.waiting_forward,
           x.waiting_backward, x.backwards, x.evals);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, recovery_order& x) {
  return f(caf::meta::type_name("recovery_order"), x.phase, x.drop_upto, x.forwards_done, x.backwards_done,
           x.evals_done, x.cancel, x.abandon_cuts, x.tick, x.forward_markers_upto, x.backward_markers_upto,
           x.needs_forward_from, x.needs_backward_from, x.reissue, x.reissue_tick, x.ticks);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, window_report& x) {
  return f(caf::meta::type_name("window_report"), x.stage, x.generation, x.optimizer_steps, x.staleness_mean,
           x.inversion_error_mean, x.ended_by);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_epoch_report& x) {
  return f(caf::meta::type_name("stage_epoch_report"), x.epoch, x.generation, x.report);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, epoch_loss_report& x) {
  return f(caf::meta::type_name("epoch_loss_report"), x.epoch, x.totals);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, eval_report& x) {
  return f(caf::meta::type_name("eval_report"), x.epoch, x.loss_sum, x.correct, x.samples);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, phase_done& x) {
  return f(caf::meta::type_name("phase_done"), x.stage, x.generation);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, spawn_stage& x) {
  return f(caf::meta::type_name("spawn_stage"), x.config_yaml, x.stage, x.steps_per_epoch);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kill_node& x) {
  return f(caf::meta::type_name("kill_node"), x.seconds);
}

}  // namespace messages
}  // namespace petra

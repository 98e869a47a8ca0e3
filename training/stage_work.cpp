// A stage's own work, timed and handed over.
#include "training/stage_work.hpp"

#include <thread>

namespace petra::training {

void stage_work::begin_phase(const std::shared_ptr<trace_recorder>& recorder, const std::string& process,
                             int32_t index) {
  ahead.clear();
  record.begin_phase(clock::now());
  timeline.open(recorder, process, index);
}

bool stage_work::slow_down(double slow, clock::time_point begin) const {
  if (slow <= 1) return false;
  const double seconds = std::chrono::duration<double>(clock::now() - begin).count();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds * (slow - 1)));
  return true;
}

activation stage_work::forward(const activation& x, int64_t id, int64_t tick, double slow, bool& slowed) {
  clock::time_point begin, end;
  activation out = timed(slow, slowed, begin, end, [&] { return compute_->forward(take_in(x), id, tick); });
  trace_forward(id, begin, end, tick);
  return out;
}

stage::backward_result stage_work::backward(const activation& rebuilt, const activation& grad, int64_t id,
                                            int64_t tick, double slow, bool& slowed,
                                            const std::function<void(const activation&)>& input_ready) {
  clock::time_point begin, end;
  stage::backward_result r = timed(slow, slowed, begin, end, [&] {
    return compute_->backward(take_in(rebuilt), take_in(grad), id, tick, input_ready);
  });
  trace_backward(r, id, begin, end);
  return r;
}

activation stage_work::evaluate(const activation& x, int64_t index) {
  const auto begin = clock::now();
  activation y = compute_->evaluate(take_in(x));
  const auto end = clock::now();
  record.add_busy(std::chrono::duration<double>(end - begin).count());
  timeline.evaluate(index, begin, end);
  return y;
}

void stage_work::trace_forward(int64_t id, clock::time_point begin, clock::time_point end, int64_t tick) {
  timeline.forward(id, begin, end, tick, compute_->outstanding());
}

void stage_work::trace_backward(const stage::backward_result& r, int64_t id, clock::time_point begin,
                                clock::time_point end) {
  const int64_t version = compute_->weight_version();
  timeline.backward(id, begin, end, version - r.forward_version,
                    {r.stepped, r.step_begin, r.step_end, version}, compute_->outstanding());
}

activation stage_work::take_in(const activation& x) const {
  return {device_->import(x.x1), device_->import(x.x2)};
}

activation stage_work::on_host(activation& a) const {
  a = take_in(a);  // once: the stage then uses the same tensors
  return {a.x1.defined() ? device_->to_host(a.x1) : tensor{},
          a.x2.defined() ? device_->to_host(a.x2) : tensor{}};
}

activation stage_work::hand_out(const activation& x, const device& consumer, int64_t id) {
  const auto begin = clock::now();
  activation out{device_->export_for(x.x1, consumer), device_->export_for(x.x2, consumer)};
  if (device_->where().type == device_type::cpu) return out;  // a handle: nothing to show
  timeline.hand_over(id, begin, clock::now());
  return out;
}

void stage_work::keep_ahead(int64_t id, activation rebuilt) {
  ahead.keep(id, std::move(rebuilt));
  rebuild_ahead();
}

void stage_work::rebuild_ahead() {
  ahead.start_next(*compute_, [this](const activation& a) { return take_in(a); });
}

stage_report stage_work::report(int64_t fault_events) {
  stage_report r = stage_report::of(*compute_);
  record.fill(r, timeline, clock::now());
  r.fault_events = fault_events;
  return r;
}

stage_report stage_work::take_epoch_report(int64_t fault_events) {
  stage_report r = report(fault_events);
  compute_->reset_stats();
  window.restart();
  record.restart_epoch(timeline, clock::now());
  return r;
}

void stage_work::continue_record(const stage_report& earlier) {
  compute_->continue_stats(earlier.stats);
  window.take(*compute_);  // the next window holds this actor's steps only, as before a move
  record.continue_from(earlier, timeline, clock::now());
}

}  // namespace petra::training

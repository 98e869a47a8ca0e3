// A stage's timeline and wait accounting.
#include "training/stage_timeline.hpp"

namespace petra::training {
namespace {

/// The timeline's flows carry the sending stage: the loader and the loss actor have their own numbers.
constexpr int loader_flow_stage = 511;

}  // namespace

void stage_timeline::open(const std::shared_ptr<trace_recorder>& recorder, const std::string& process,
                          int32_t index) {
  idle_ = false;
  index_ = index;
  if (recorder && !track_.valid()) {
    recorder_ = recorder;
    track_ = recorder->track(process, "stage " + std::to_string(index + 1));
  }
}

trace_recorder* stage_timeline::tracer(int64_t id) const {
  return recorder_ && recorder_->records(id) ? recorder_.get() : nullptr;
}

void stage_timeline::forward(int64_t id, time_point begin, time_point end, int64_t tick, std::size_t fifo) {
  end_idle(begin);
  last_micro_batch_ = id;
  trace_recorder* t = tracer(id);
  if (!t) return;
  t->span(track_, "forward", begin, end, id, {{"micro_batch", id}, {"stage_tick", tick}});
  t->flow_in(track_, trace_flow_id(flow_kind::forward, index_ > 0 ? index_ - 1 : loader_flow_stage, id, id),
             begin, id);
  t->flow_out(track_, trace_flow_id(flow_kind::forward, index_, id, id), begin + (end - begin) / 2, id);
  t->counter(track_, "fifo", end, id, static_cast<double>(fifo));
}

void stage_timeline::backward(int64_t id, time_point begin, time_point end, int64_t staleness,
                              const step_span& step, std::size_t fifo) {
  end_idle(begin);
  last_micro_batch_ = id;
  trace_recorder* t = tracer(id);
  if (!t) return;
  const int from = index_ + 1;  // the stage after, or the loss actor, whose number is J
  t->span(track_, "rebuild + backward", begin, step.stepped ? step.begin : end, id,
          {{"micro_batch", id}, {"staleness", staleness}});
  if (step.stepped) t->span(track_, "optimizer step", step.begin, step.end, id, {{"step", step.version}});
  t->flow_in(track_, trace_flow_id(flow_kind::backward, from, id, id), begin, id);
  if (index_ > 0)
    t->flow_out(track_, trace_flow_id(flow_kind::backward, index_, id, id), begin + (end - begin) / 2, id);
  t->counter(track_, "fifo", end, id, static_cast<double>(fifo));
}

void stage_timeline::evaluate(int64_t index, time_point begin, time_point end) {
  if (trace_recorder* t = tracer(last_micro_batch_))
    t->span(track_, "evaluate", begin, end, last_micro_batch_, {{"batch", index}});
}

void stage_timeline::hand_over(int64_t id, time_point begin, time_point end) {
  if (trace_recorder* t = tracer(id)) t->span(track_, "hand-over", begin, end, id, {{"micro_batch", id}});
}

void stage_timeline::mark_idle(bool for_input, time_point now) {
  if (idle_) return;
  idle_ = true;
  waits_for_input_ = for_input;
  idle_since_ = counted_until_ = now;
}

void stage_timeline::split_idle(time_point now) {
  if (!idle_ || now <= counted_until_) return;
  (waits_for_input_ ? wait_input_seconds : wait_gradient_seconds) +=
      std::chrono::duration<double>(now - counted_until_).count();
  counted_until_ = now;
}

void stage_timeline::end_idle(time_point now) {
  if (!idle_) return;
  split_idle(now);
  idle_ = false;
  if (trace_recorder* t = tracer(last_micro_batch_))
    t->span(track_, waits_for_input_ ? "wait for input" : "wait for gradient", idle_since_, now,
            last_micro_batch_);
}

void stage_timeline::mailbox(std::size_t waiting, time_point now) {
  if (trace_recorder* t = tracer(last_micro_batch_))
    t->counter(track_, "mailbox", now, last_micro_batch_, static_cast<double>(waiting));
}

}  // namespace petra::training

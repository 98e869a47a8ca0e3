// The reference simulator. Per tick every stage does one forward and one backward, in
// that order, with the weights it holds at the start of the tick (backward_first: the
// backward, then the forward with the weights after its optimizer step); stage j's backward
// consumes what stage j+1 produced on the previous tick. The last stage runs forward,
// loss and backward in one tick.
#include "training/simulator.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>

#include "training/cut.hpp"
#include "training/forward_gradient.hpp"

namespace petra {
namespace {

struct forward_message {
  int64_t id;
  activation x;
};

struct backward_message {
  int64_t id;
  activation rebuilt;  // the stage's output, rebuilt (or exact)
  activation grad;
};

/// `x`, made by `from`, as `to` receives it (docs/design.md §5: the one hand-over of a message).
tensor hand_over(const tensor& x, backend& from, backend& to) {
  return to.import(from.export_for(x, to.where()));
}

}  // namespace

activation hand_over(const activation& a, backend& from, backend& to) {
  return {hand_over(a.x1, from, to), hand_over(a.x2, from, to)};
}

simulator::simulator(std::vector<stage*> stages, backend& loss, int64_t spacing, bool backward_first)
    : stages_(std::move(stages)),
      loss_(loss),
      spacing_(spacing),
      backward_first_(backward_first),
      busy_(stages_.size(), 0.0) {
  if (stages_.empty()) throw std::invalid_argument("simulator: no stages");
  if (spacing_ < 1) throw std::invalid_argument("simulator: a micro-batch enters every spacing >= 1 ticks");
}

run_totals simulator::run(const std::function<bool(micro_batch&)>& next,
                          const std::function<void(const run_totals&)>& on_done) {
  simulator_hooks hooks;
  bool exhausted = false;
  hooks.next = [&](int64_t tick, tick_input& in) {
    if (exhausted) return false;
    if (tick % spacing_ == 0) {
      in.has_train = next(in.train);
      exhausted = !in.has_train;
    }
    return !exhausted;
  };
  hooks.on_done = on_done;
  return run(hooks);
}

namespace {

/// One run of the simulator: what is in flight between the stages, and the run's totals.
class tick_loop {
 public:
  tick_loop(const std::vector<stage*>& stages, backend& loss, forward_gradient* fg,
            const simulator_hooks& hooks)
      : stages_(stages),
        J_(stages.size()),
        loss_(loss),
        fg_(fg),
        hooks_(hooks),
        fwd_in_(J_),
        fwd_next_(J_),
        bwd_in_(J_),
        bwd_next_(J_),
        eval_in_(J_),
        eval_next_(J_) {}

  /// Starts from `from`: its tick, totals and labels, each stage's state and its messages in flight.
  int64_t restore(const pipeline_cut& from) {
    if (fg_) throw std::logic_error("simulator: a forward-gradient run resumes no cut");
    if (from.stages.size() != J_)
      throw std::invalid_argument("simulator: the cut holds " + std::to_string(from.stages.size()) +
                                  " stages, the pipeline " + std::to_string(J_));
    labels_ = from.labels;
    totals_ = from.totals;
    in_flight_ = from.in_flight;
    for (std::size_t j = 0; j < J_; ++j) {
      const stage_cut& c = from.stages[j];
      if (c.async.present) throw std::invalid_argument("simulator: the cut was taken by the async runtime");
      backend& be = stages_[j]->compute_backend();
      restore_stage_cut(*stages_[j], be, c);
      auto up = [&](const activation& a) {
        return activation{a.x1.defined() ? be.import(a.x1) : tensor{},
                          a.x2.defined() ? be.import(a.x2) : tensor{}};
      };
      if (c.forward.id >= 0) fwd_in_[j] = forward_message{c.forward.id, up(c.forward.x)};
      if (c.backward.id >= 0)
        bwd_in_[j] = backward_message{c.backward.id, up(c.backward.rebuilt), up(c.backward.grad)};
      if (c.eval.index >= 0) {
        eval_item item = c.eval;
        item.images = up(item.images);
        eval_in_[j] = std::move(item);
      }
    }
    return from.tick;
  }

  /// The cut before tick t: every stage's state and what is in flight towards it, on the host.
  pipeline_cut cut(int64_t t) {
    if (fg_) throw std::logic_error("simulator: a forward-gradient run takes no cuts");
    pipeline_cut cut;
    cut.tick = t;
    cut.labels = labels_;
    cut.totals = totals_;
    cut.in_flight = in_flight_;
    cut.completed = totals_.micro_batches;
    for (std::size_t j = 0; j < J_; ++j) {
      backend& be = stages_[j]->compute_backend();
      stage_cut c = cut_stage(*stages_[j], be);
      auto down = [&](const activation& a) {
        return activation{a.x1.defined() ? be.to_host(a.x1) : tensor{},
                          a.x2.defined() ? be.to_host(a.x2) : tensor{}};
      };
      if (fwd_in_[j]) c.forward = cut_forward{fwd_in_[j]->id, down(fwd_in_[j]->x)};
      if (bwd_in_[j])
        c.backward = cut_backward{bwd_in_[j]->id, down(bwd_in_[j]->rebuilt), down(bwd_in_[j]->grad)};
      if (eval_in_[j]) {
        c.eval = *eval_in_[j];
        c.eval.images = down(c.eval.images);
      }
      cut.stages.push_back(std::move(c));
    }
    return cut;
  }

  /// Tick t's input into stage 1, while there is any; false once the data are exhausted and nothing
  /// is in flight (the run ends).
  bool feed(int64_t t) {
    if (!exhausted_) {
      tick_input in;
      exhausted_ = !hooks_.next(t, in);
      backend& first = stages_[0]->compute_backend();
      if (in.has_train) {
        labels_[in.train.id] = std::move(in.train.labels);
        fwd_in_[0] = forward_message{in.train.id, activation{first.import(in.train.images.x1), {}}};
        ++in_flight_;
      }
      if (in.has_eval) {
        in.eval.images = activation{first.import(in.eval.images.x1), {}};
        eval_in_[0] = std::move(in.eval);
        ++in_flight_;
      }
    }
    return !(exhausted_ && in_flight_ == 0);
  }

  /// Stage j's evaluation batch, first in the tick: the weights the tick starts with.
  void evaluate(std::size_t j) {
    if (!eval_in_[j]) return;
    stage& s = *stages_[j];
    eval_item item = std::move(*eval_in_[j]);
    eval_in_[j].reset();
    const activation out = s.evaluate(item.images);
    item.images = hand_over(out, s.compute_backend(), next_backend(j));
    if (j + 1 < J_) {
      eval_next_[j + 1] = std::move(item);
      return;
    }
    int64_t correct = 0;
    const double loss = loss_.softmax_cross_entropy(item.images.x1, item.labels, nullptr, &correct);
    --in_flight_;
    if (hooks_.on_eval) hooks_.on_eval(item, loss, correct);
  }

  /// Stage j's forward at tick t; the last stage's is scored and its backward queued in the same tick.
  void forward(std::size_t j, int64_t t) {
    if (!fwd_in_[j]) return;
    stage& s = *stages_[j];
    const int64_t id = fwd_in_[j]->id;
    activation out =
        fg_ ? fg_->forward(j, fwd_in_[j]->x, id, t, labels_.at(id)) : s.forward(fwd_in_[j]->x, id, t);
    fwd_in_[j].reset();
    if (j + 1 < J_) {
      fwd_next_[j + 1] = forward_message{id, hand_over(out, s.compute_backend(), next_backend(j))};
      return;
    }
    tensor dlogits;
    int64_t correct = 0;
    auto it = labels_.find(id);
    const float loss = loss_.softmax_cross_entropy(hand_over(out.x1, s.compute_backend(), loss_), it->second,
                                                   &dlogits, &correct);
    if (fg_) fg_->loss_derivatives(id, dlogits, loss_);
    dlogits = hand_over(dlogits, loss_, s.compute_backend());
    totals_.samples += static_cast<int64_t>(it->second.size());
    totals_.correct += correct;
    totals_.loss_sum += loss;
    if (hooks_.on_loss) hooks_.on_loss(id, loss, correct, static_cast<int64_t>(it->second.size()));
    labels_.erase(it);
    bwd_in_[j] = backward_message{id, out, activation{dlogits, {}}};
  }

  /// Stage j's backward at tick t (forward gradients: of the estimate whose derivatives are back).
  void backward(std::size_t j, int64_t t) {
    if (fg_ && !bwd_in_[j]) {  // stages j < J: the backward of ĝ_j, once its derivatives are back
      const int64_t id = fg_->backward(j, t);
      if (id < 0) return;
      if (hooks_.on_backward) hooks_.on_backward(j, id);
      if (fg_->backward_done(id)) completed();
      return;
    }
    if (!bwd_in_[j]) return;
    stage& s = *stages_[j];
    const int64_t id = bwd_in_[j]->id;
    stage::backward_result r = s.backward(bwd_in_[j]->rebuilt, bwd_in_[j]->grad, id, t);
    bwd_in_[j].reset();
    if (hooks_.on_backward) hooks_.on_backward(j, id);
    if (fg_) {  // the last stage: forward gradients send back no gradient
      if (fg_->backward_done(id)) completed();
      return;
    }
    if (j == 0) {
      completed();
      return;
    }
    backend& to = stages_[j - 1]->compute_backend();
    bwd_next_[j - 1] = backward_message{id, hand_over(r.input, s.compute_backend(), to),
                                        hand_over(r.input_grad, s.compute_backend(), to)};
  }

  /// The tick ends: what the stages sent arrives.
  void end_tick() {
    if (fg_) fg_->end_tick();
    std::swap(fwd_in_, fwd_next_);
    std::swap(bwd_in_, bwd_next_);
    std::swap(eval_in_, eval_next_);
    ++totals_.ticks;
  }

  const run_totals& totals() const { return totals_; }

 private:
  backend& next_backend(std::size_t j) { return j + 1 < J_ ? stages_[j + 1]->compute_backend() : loss_; }

  /// A micro-batch's last backward (stage 1's but for forward gradients).
  void completed() {
    --in_flight_;
    ++totals_.micro_batches;
    if (hooks_.on_done) hooks_.on_done(totals_);
  }

  const std::vector<stage*>& stages_;
  const std::size_t J_;
  backend& loss_;
  forward_gradient* fg_;
  const simulator_hooks& hooks_;
  std::vector<std::optional<forward_message>> fwd_in_, fwd_next_;
  std::vector<std::optional<backward_message>> bwd_in_, bwd_next_;
  std::vector<std::optional<eval_item>> eval_in_, eval_next_;
  std::map<int64_t, std::vector<int32_t>> labels_;  // of the training micro-batches in flight
  run_totals totals_;
  bool exhausted_ = false;
  int64_t in_flight_ = 0;  // training micro-batches and evaluation batches
};

}  // namespace

run_totals simulator::run(const simulator_hooks& hooks, const pipeline_cut* from) {
  tick_loop loop(stages_, loss_, fg_, hooks);
  int64_t t = from ? loop.restore(*from) : 0;
  for (;; ++t) {
    if (hooks.cut_at && hooks.on_cut && !(from && t == from->tick) && hooks.cut_at(t)) {
      pipeline_cut cut = loop.cut(t);
      hooks.on_cut(cut);
    }
    if (!loop.feed(t)) break;
    for (std::size_t j = 0; j < stages_.size(); ++j) {
      const auto busy_since = std::chrono::steady_clock::now();
      loop.evaluate(j);
      if (backward_first_ && j + 1 < stages_.size()) {  // the forward sees the backward's optimizer step
        loop.backward(j, t);
        loop.forward(j, t);
      } else {
        loop.forward(j, t);
        loop.backward(j, t);
      }
      busy_[j] += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since).count();
    }
    loop.end_tick();
    ++tick_;
  }
  return loop.totals();
}

namespace {

/// `mb`'s images through `pass` of every stage in turn (an evaluation or calibration forward), the
/// last stage's output handed over to `loss`.
activation through_stages(const std::vector<stage*>& stages, backend& loss, const micro_batch& mb,
                          activation (stage::*pass)(const activation&)) {
  activation h{stages.front()->compute_backend().import(mb.images.x1), {}};
  for (std::size_t j = 0; j < stages.size(); ++j) {
    h = (stages[j]->*pass)(h);
    backend& to = j + 1 < stages.size() ? stages[j + 1]->compute_backend() : loss;
    h = hand_over(h, stages[j]->compute_backend(), to);
  }
  return h;
}

}  // namespace

std::pair<double, int64_t> simulator::evaluate(const micro_batch& mb) {
  const activation logits = through_stages(stages_, loss_, mb, &stage::evaluate);
  int64_t correct = 0;
  const double loss = loss_.softmax_cross_entropy(logits.x1, mb.labels, nullptr, &correct);
  return {loss, correct};
}

void simulator::calibrate(const micro_batch& mb) { through_stages(stages_, loss_, mb, &stage::calibrate); }

}  // namespace petra

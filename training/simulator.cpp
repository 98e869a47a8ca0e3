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

run_totals simulator::run(const simulator_hooks& hooks, const pipeline_cut* from) {
  const std::size_t J = stages_.size();
  std::vector<std::optional<forward_message>> fwd_in(J), fwd_next(J);
  std::vector<std::optional<backward_message>> bwd_in(J), bwd_next(J);
  std::vector<std::optional<eval_item>> eval_in(J), eval_next(J);
  std::map<int64_t, std::vector<int32_t>> labels;
  run_totals totals;
  bool exhausted = false;
  int64_t in_flight = 0;  // training micro-batches and evaluation batches
  int64_t t = 0;

  if (fg_ && from) throw std::logic_error("simulator: a forward-gradient run resumes no cut");
  if (from) {
    if (from->stages.size() != J)
      throw std::invalid_argument("simulator: the cut holds " + std::to_string(from->stages.size()) +
                                  " stages, the pipeline " + std::to_string(J));
    t = from->tick;
    labels = from->labels;
    totals = from->totals;
    in_flight = from->in_flight;
    for (std::size_t j = 0; j < J; ++j) {
      const stage_cut& c = from->stages[j];
      if (c.async.present) throw std::invalid_argument("simulator: the cut was taken by the async runtime");
      backend& be = stages_[j]->compute_backend();
      restore_stage_cut(*stages_[j], be, c);
      auto up = [&](const activation& a) {
        return activation{a.x1.defined() ? be.import(a.x1) : tensor{},
                          a.x2.defined() ? be.import(a.x2) : tensor{}};
      };
      if (c.forward.id >= 0) fwd_in[j] = forward_message{c.forward.id, up(c.forward.x)};
      if (c.backward.id >= 0)
        bwd_in[j] = backward_message{c.backward.id, up(c.backward.rebuilt), up(c.backward.grad)};
      if (c.eval.index >= 0) {
        eval_item item = c.eval;
        item.images = up(item.images);
        eval_in[j] = std::move(item);
      }
    }
  }

  for (;; ++t) {
    if (hooks.cut_at && hooks.on_cut && !(from && t == from->tick) && hooks.cut_at(t)) {
      if (fg_) throw std::logic_error("simulator: a forward-gradient run takes no cuts");
      pipeline_cut cut;
      cut.tick = t;
      cut.labels = labels;
      cut.totals = totals;
      cut.in_flight = in_flight;
      cut.completed = totals.micro_batches;
      for (std::size_t j = 0; j < J; ++j) {
        backend& be = stages_[j]->compute_backend();
        stage_cut c = cut_stage(*stages_[j], be);
        auto down = [&](const activation& a) {
          return activation{a.x1.defined() ? be.to_host(a.x1) : tensor{},
                            a.x2.defined() ? be.to_host(a.x2) : tensor{}};
        };
        if (fwd_in[j]) c.forward = cut_forward{fwd_in[j]->id, down(fwd_in[j]->x)};
        if (bwd_in[j])
          c.backward = cut_backward{bwd_in[j]->id, down(bwd_in[j]->rebuilt), down(bwd_in[j]->grad)};
        if (eval_in[j]) {
          c.eval = *eval_in[j];
          c.eval.images = down(c.eval.images);
        }
        cut.stages.push_back(std::move(c));
      }
      hooks.on_cut(cut);
    }
    if (!exhausted) {
      tick_input in;
      exhausted = !hooks.next(t, in);
      if (in.has_train) {
        labels[in.train.id] = std::move(in.train.labels);
        fwd_in[0] = forward_message{in.train.id,
                                    activation{stages_[0]->compute_backend().import(in.train.images.x1), {}}};
        ++in_flight;
      }
      if (in.has_eval) {
        in.eval.images = activation{stages_[0]->compute_backend().import(in.eval.images.x1), {}};
        eval_in[0] = std::move(in.eval);
        ++in_flight;
      }
    }
    if (exhausted && in_flight == 0) break;

    for (std::size_t j = 0; j < J; ++j) {
      stage& s = *stages_[j];
      const auto busy_since = std::chrono::steady_clock::now();
      if (eval_in[j]) {  // first in the tick: the weights the tick starts with
        eval_item item = std::move(*eval_in[j]);
        eval_in[j].reset();
        const activation out = s.evaluate(item.images);
        backend& to = j + 1 < J ? stages_[j + 1]->compute_backend() : loss_;
        item.images = hand_over(out, s.compute_backend(), to);
        if (j + 1 < J) {
          eval_next[j + 1] = std::move(item);
        } else {
          int64_t correct = 0;
          const double loss = loss_.softmax_cross_entropy(item.images.x1, item.labels, nullptr, &correct);
          --in_flight;
          if (hooks.on_eval) hooks.on_eval(item, loss, correct);
        }
      }
      const auto forward = [&] {
        if (fwd_in[j]) {
          const int64_t id = fwd_in[j]->id;
          activation out =
              fg_ ? fg_->forward(j, fwd_in[j]->x, id, t, labels.at(id)) : s.forward(fwd_in[j]->x, id, t);
          fwd_in[j].reset();
          if (j + 1 < J) {
            fwd_next[j + 1] =
                forward_message{id, hand_over(out, s.compute_backend(), stages_[j + 1]->compute_backend())};
          } else {  // last stage: loss and backward in the same tick
            tensor dlogits;
            int64_t correct = 0;
            auto it = labels.find(id);
            const float loss = loss_.softmax_cross_entropy(hand_over(out.x1, s.compute_backend(), loss_),
                                                           it->second, &dlogits, &correct);
            if (fg_) fg_->loss_derivatives(id, dlogits, loss_);
            dlogits = hand_over(dlogits, loss_, s.compute_backend());
            totals.samples += static_cast<int64_t>(it->second.size());
            totals.correct += correct;
            totals.loss_sum += loss;
            if (hooks.on_loss) hooks.on_loss(id, loss, correct, static_cast<int64_t>(it->second.size()));
            labels.erase(it);
            bwd_in[j] = backward_message{id, out, activation{dlogits, {}}};
          }
        }
      };
      const auto completed = [&] {  // a micro-batch's last backward (stage 1's but for forward gradients)
        --in_flight;
        ++totals.micro_batches;
        if (hooks.on_done) hooks.on_done(totals);
      };
      const auto backward = [&] {
        if (fg_ && !bwd_in[j]) {  // stages j < J: the backward of ĝ_j, once its derivatives are back
          const int64_t id = fg_->backward(j, t);
          if (id < 0) return;
          if (hooks.on_backward) hooks.on_backward(j, id);
          if (fg_->backward_done(id)) completed();
          return;
        }
        if (bwd_in[j]) {
          const int64_t id = bwd_in[j]->id;
          stage::backward_result r = s.backward(bwd_in[j]->rebuilt, bwd_in[j]->grad, id, t);
          bwd_in[j].reset();
          if (hooks.on_backward) hooks.on_backward(j, id);
          if (fg_) {  // the last stage: forward gradients send back no gradient
            if (fg_->backward_done(id)) completed();
            return;
          }
          if (j > 0) {
            backend& to = stages_[j - 1]->compute_backend();
            bwd_next[j - 1] = backward_message{id, hand_over(r.input, s.compute_backend(), to),
                                               hand_over(r.input_grad, s.compute_backend(), to)};
          } else {
            completed();
          }
        }
      };
      if (backward_first_ && j + 1 < J) {  // the forward sees the backward's optimizer step
        backward();
        forward();
      } else {
        forward();
        backward();
      }
      busy_[j] += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since).count();
    }
    if (fg_) fg_->end_tick();
    std::swap(fwd_in, fwd_next);
    std::swap(bwd_in, bwd_next);
    std::swap(eval_in, eval_next);
    ++tick_;
    ++totals.ticks;
  }
  return totals;
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

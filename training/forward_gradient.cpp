// Forward gradients on the tick schedule: tangents forward, B floats back per stage.
#include "training/forward_gradient.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "compute/forward/stacked.hpp"
#include "compute/pipeline/forward_mode.hpp"
#include "training/simulator.hpp"

namespace petra {

forward_gradient::forward_gradient(std::vector<stage*> stages, const forward_gradient_options& options,
                                   int num_classes, const optimizer_settings& optimizer, uint64_t seed,
                                   const activation_shape& input, int cosine_every)
    : compute_(std::move(stages)),
      cosine_every_(cosine_every),
      cosine_(compute_.size()),
      tangents_in_(compute_.size()),
      tangents_next_(compute_.size()),
      ready_(compute_.size()),
      arriving_(compute_.size()) {
  activation_shape shape = input;
  for (stage* s : compute_) {
    stages_.push_back(std::make_unique<forward_gradient_stage>(*s, compute_.size(), options, num_classes,
                                                               optimizer, seed, shape));
    for (const auto& b : s->blocks()) shape = b->output_shape(shape);
  }
}

activation forward_gradient::forward(std::size_t j, const activation& x, int64_t id, int64_t tick,
                                     const std::vector<int32_t>& labels) {
  const std::size_t J = compute_.size();
  if (j == 0 && J > 1 && cosine_every_ > 0 && id % cosine_every_ == 0)
    truth_[id] = sampled{true_gradients(x, labels), J - 1};
  std::vector<stage_tangent> received = std::move(tangents_in_[j]);
  tangents_in_[j].clear();
  std::function<activation(const activation&)> guess;
  if (guess_for) guess = [&](const activation& z) { return guess_for(j, id, z); };
  forward_gradient_stage::forward_result r = stages_[j]->forward(x, id, tick, labels, received, guess);
  if (j + 1 == J) {  // the logits' tangents wait for the loss
    at_loss_ = std::move(r.tangents);
    return r.z;
  }
  if (!stages_[j]->awaits_derivatives()) ready_[j] = derivatives{id, {}};  // what is kept is ĝ_j itself
  backend& be = compute_[j]->compute_backend();
  backend& next = compute_[j + 1]->compute_backend();
  for (stage_tangent& t : r.tangents) {
    t.direction = hand_over(t.direction, be, next);
    traffic_.tangent_bytes += static_cast<int64_t>(t.direction.bytes());
  }
  tangents_next_[j + 1] = std::move(r.tangents);
  return r.z;
}

void forward_gradient::loss_derivatives(int64_t id, const tensor& dlogits, backend& loss) {
  if (at_loss_.empty()) return;
  backend& last = compute_.back()->compute_backend();
  // Every logits tangent in one product with the loss gradient, as the loss actor does: stacked (a
  // view when the last stage's stacked pass left them back to back) and handed over once.
  std::vector<tensor> logits_dots;
  for (const stage_tangent& t : at_loss_) logits_dots.push_back(t.direction.x1);
  const tensor stacked = hand_over(activation{stack_batches(last, logits_dots), {}}, last, loss).x1;
  std::vector<std::vector<float>> per_tangent = loss_derivatives_per_tangent(loss, dlogits, stacked);
  for (std::size_t g = 0; g < at_loss_.size(); ++g) {
    derivatives d{id, std::move(per_tangent[g])};
    ++traffic_.upstream_messages;
    traffic_.upstream_bytes += static_cast<int64_t>(d.per_sample.size() * sizeof(float));
    arriving_[static_cast<std::size_t>(at_loss_[g].origin)] = std::move(d);
  }
  at_loss_.clear();
}

int64_t forward_gradient::backward(std::size_t j, int64_t tick) {
  if (!ready_[j]) return -1;
  derivatives d = std::move(*ready_[j]);
  ready_[j].reset();
  const forward_gradient_stage::backward_result r = stages_[j]->backward(d.id, d.per_sample, tick);
  const activation& estimate = r.estimate;
  if (on_estimate) on_estimate(j, d.id, estimate);
  auto truth = truth_.find(d.id);
  if (truth != truth_.end()) {
    const activation& g = truth->second.grads[j];
    backend& be = compute_[j]->compute_backend();
    double dot = 0, norm_estimate = 0, norm_g = 0;
    for (double v : per_sample_dot(be, estimate, g)) dot += v;
    for (double v : per_sample_dot(be, estimate, estimate)) norm_estimate += v;
    for (double v : per_sample_dot(be, g, g)) norm_g += v;
    const double cosine = norm_estimate > 0 && norm_g > 0 ? dot / std::sqrt(norm_estimate * norm_g) : 0.0;
    gradient_cosine& c = cosine_[j];
    ++c.samples;
    c.sum += cosine;
    c.min = std::min(c.min, cosine);
    if (--truth->second.unused == 0) truth_.erase(truth);
  }
  return d.id;
}

gradient_cosine forward_gradient::take_cosine(std::size_t j) {
  gradient_cosine c = cosine_[j];
  cosine_[j] = gradient_cosine{};
  return c;
}

std::vector<activation> forward_gradient::true_gradients(const activation& images,
                                                         const std::vector<int32_t>& labels) {
  const std::size_t J = compute_.size();
  std::vector<std::vector<tensor>> saved(J);  // the accumulated gradients, to put back
  std::vector<tape> tapes(J);
  activation h = images;
  for (std::size_t k = 0; k < J; ++k) {
    backend& be = compute_[k]->compute_backend();
    for (parameter* p : compute_[k]->parameters()) {
      saved[k].push_back(be.empty(p->grad.shape()));
      be.copy(p->grad, saved[k].back());
    }
    if (k > 0) h = hand_over(h, compute_[k - 1]->compute_backend(), be);
    for (auto& b : compute_[k]->blocks()) h = b->forward(h, pass::recompute, &tapes[k]);
  }
  tensor dlogits;
  compute_.back()->compute_backend().softmax_cross_entropy(h.x1, labels, &dlogits, nullptr);
  std::vector<activation> grads(J - 1);
  activation d{dlogits, {}};
  for (std::size_t k = J; k-- > 0;) {
    backend& be = compute_[k]->compute_backend();
    if (k + 1 < J) grads[k] = d = hand_over(d, compute_[k + 1]->compute_backend(), be);
    auto& blocks = compute_[k]->blocks();
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) d = (*it)->backward(tapes[k], d);
    const std::vector<parameter*> params = compute_[k]->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) be.copy(saved[k][i], params[i]->grad);
  }
  return grads;
}

bool forward_gradient::backward_done(int64_t id) {
  if (++backwards_[id] < compute_.size()) return false;
  backwards_.erase(id);
  return true;
}

void forward_gradient::end_tick() {
  for (std::size_t j = 0; j < compute_.size(); ++j) {
    if (ready_[j])
      throw std::logic_error("forward_gradient: stage " + std::to_string(j + 1) +
                             " left the derivatives of micro-batch " + std::to_string(ready_[j]->id) +
                             " unused");
    ready_[j] = std::move(arriving_[j]);
    arriving_[j].reset();
  }
  std::swap(tangents_in_, tangents_next_);
  for (auto& t : tangents_next_) t.clear();
}

}  // namespace petra

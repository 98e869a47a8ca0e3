// Forward gradients on the tick schedule: tangents forward, B floats back per stage.
#include "training/forward_gradient.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "compute/pipeline/forward_mode.hpp"
#include "training/simulator.hpp"

namespace petra {

forward_gradient::forward_gradient(std::vector<stage*> stages, const forward_gradient_options& options,
                                   int num_classes, const optimizer_settings& optimizer, uint64_t seed,
                                   const activation_shape& input, int cosine_every)
    : stages_(std::move(stages)),
      options_(options),
      seed_(seed),
      cosine_every_(cosine_every),
      cosine_(stages_.size()),
      aux_(stages_.size()),
      tangents_in_(stages_.size()),
      tangents_next_(stages_.size()),
      guesses_(stages_.size()),
      guess_peak_bytes_(stages_.size()),
      ready_(stages_.size()),
      arriving_(stages_.size()) {
  activation_shape shape = input;
  for (std::size_t j = 0; j + 1 < stages_.size(); ++j) {
    for (const auto& b : stages_[j]->blocks()) shape = b->output_shape(shape);
    if (!options_.needs_aux_head()) continue;
    if (shape.x2.empty() || shape.x1.size() != 4)
      throw std::invalid_argument("forward_gradient: stage " + std::to_string(j + 1) + " outputs " +
                                  shape.str() + "; an auxiliary head needs two streams (N, C, H, W)");
    aux_[j] = std::make_unique<local_loss>(
        stages_[j]->compute_backend(), stages_[j]->blocks().back()->name() + ".aux",
        static_cast<int>(shape.x1[1]), options_.aux_width, num_classes, optimizer, seed);
  }
}

activation forward_gradient::forward(std::size_t j, const activation& x, int64_t id, int64_t tick,
                                     const std::vector<int32_t>& labels) {
  stage& s = *stages_[j];
  backend& be = s.compute_backend();
  if (j == 0 && stages_.size() > 1 && cosine_every_ > 0 && id % cosine_every_ == 0)
    truth_[id] = sampled{true_gradients(x, labels), stages_.size() - 1};
  std::vector<tangent> received = std::move(tangents_in_[j]);
  tangents_in_[j].clear();
  const activation z = s.forward(x, id, tick);
  if (j + 1 == stages_.size()) {  // the loss: each tangent's directional derivatives go home
    const float per_mean = 1.f / static_cast<float>(labels.size());  // ∇ of the mean loss
    for (tangent& t : received) {
      const loss_jvp l = loss_jvp_from(be, s.blocks(), 0, x, t.direction, labels, pass::recompute);
      derivatives d{id, {}};
      for (double v : l.per_sample) d.per_sample.push_back(static_cast<float>(v) * per_mean);
      ++traffic_.upstream_messages;
      traffic_.upstream_bytes += static_cast<int64_t>(d.per_sample.size() * sizeof(float));
      arriving_[t.origin] = std::move(d);
    }
    return z;
  }
  std::vector<tangent> sent;
  for (tangent& t : received)  // recompute: batch statistics as in the forward, running ones untouched
    sent.push_back({t.origin, stage_jvp(s, x, t.direction, pass::recompute).second});
  activation local_grad;
  if (aux_[j]) local_grad = aux_[j]->step(z, labels).grad;
  activation guess = guess_for ? guess_for(j, id, z)
                     : options_.guess == guess_kind::local
                         ? local_grad
                         : gaussian_guess(be, z, seed_, static_cast<int>(j), id);
  if (options_.target == target_kind::local) {  // the local loss' own gradient, projected at once
    if (guess_for || options_.guess == guess_kind::random) {
      const std::vector<double> d = per_sample_dot(be, local_grad, guess);
      guess = project_on_guess(be, guess, std::vector<float>(d.begin(), d.end()));
    }  // a local guess of a local target is its own projection: ĝ_j = ∇ℓ_j exactly
    ready_[j] = derivatives{id, {}};  // no derivatives: what is kept is ĝ_j itself
  } else {
    sent.push_back({j, guess});
  }
  guesses_[j][id] = std::move(guess);
  std::size_t held = 0;
  for (const auto& kept : guesses_[j]) held += kept.second.bytes();
  guess_peak_bytes_[j] = std::max(guess_peak_bytes_[j], held);
  backend& next = stages_[j + 1]->compute_backend();
  for (tangent& t : sent) {
    t.direction = hand_over(t.direction, be, next);
    traffic_.tangent_bytes += static_cast<int64_t>(t.direction.bytes());
  }
  tangents_next_[j + 1] = std::move(sent);
  return z;
}

int64_t forward_gradient::backward(std::size_t j, int64_t tick) {
  if (!ready_[j]) return -1;
  derivatives d = std::move(*ready_[j]);
  ready_[j].reset();
  auto found = guesses_[j].find(d.id);
  if (found == guesses_[j].end())
    throw std::logic_error("forward_gradient: stage " + std::to_string(j + 1) +
                           " got derivatives of micro-batch " + std::to_string(d.id) +
                           " but holds no guess for it");
  stage& s = *stages_[j];
  const activation estimate = d.per_sample.empty()
                                  ? found->second
                                  : project_on_guess(s.compute_backend(), found->second, d.per_sample);
  guesses_[j].erase(found);
  if (on_estimate) on_estimate(j, d.id, estimate);
  auto truth = truth_.find(d.id);
  if (truth != truth_.end()) {
    const activation& g = truth->second.grads[j];
    backend& be = s.compute_backend();
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
  s.backward(activation{}, estimate, d.id, tick);  // the stage keeps its input: the output is not needed
  return d.id;
}

gradient_cosine forward_gradient::take_cosine(std::size_t j) {
  gradient_cosine c = cosine_[j];
  cosine_[j] = gradient_cosine{};
  return c;
}

std::vector<activation> forward_gradient::true_gradients(const activation& images,
                                                         const std::vector<int32_t>& labels) {
  const std::size_t J = stages_.size();
  std::vector<std::vector<tensor>> saved(J);  // the accumulated gradients, to put back
  std::vector<tape> tapes(J);
  activation h = images;
  for (std::size_t k = 0; k < J; ++k) {
    backend& be = stages_[k]->compute_backend();
    for (parameter* p : stages_[k]->parameters()) {
      saved[k].push_back(be.empty(p->grad.shape()));
      be.copy(p->grad, saved[k].back());
    }
    if (k > 0) h = hand_over(h, stages_[k - 1]->compute_backend(), be);
    for (auto& b : stages_[k]->blocks()) h = b->forward(h, pass::recompute, &tapes[k]);
  }
  tensor dlogits;
  stages_.back()->compute_backend().softmax_cross_entropy(h.x1, labels, &dlogits, nullptr);
  std::vector<activation> grads(J - 1);
  activation d{dlogits, {}};
  for (std::size_t k = J; k-- > 0;) {
    backend& be = stages_[k]->compute_backend();
    if (k + 1 < J) grads[k] = d = hand_over(d, stages_[k + 1]->compute_backend(), be);
    auto& blocks = stages_[k]->blocks();
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) d = (*it)->backward(tapes[k], d);
    const std::vector<parameter*> params = stages_[k]->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) be.copy(saved[k][i], params[i]->grad);
  }
  return grads;
}

bool forward_gradient::backward_done(int64_t id) {
  if (++backwards_[id] < stages_.size()) return false;
  backwards_.erase(id);
  return true;
}

void forward_gradient::end_tick() {
  for (std::size_t j = 0; j < stages_.size(); ++j) {
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

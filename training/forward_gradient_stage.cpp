// One stage's forward gradients.
#include "training/forward_gradient_stage.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "compute/forward/stacked.hpp"
#include "compute/pipeline/forward_mode.hpp"

namespace petra {

forward_gradient_stage::forward_gradient_stage(stage& s, std::size_t count,
                                               const forward_gradient_options& options, int num_classes,
                                               const optimizer_settings& optimizer, uint64_t seed,
                                               const activation_shape& input)
    : s_(s),
      index_(static_cast<std::size_t>(s.index())),
      count_(count),
      last_(index_ + 1 == count),
      options_(options),
      seed_(seed) {
  if (last_ || !options_.needs_aux_head()) return;
  activation_shape shape = input;
  for (const auto& b : s_.blocks()) shape = b->output_shape(shape);
  if (shape.x2.empty() || shape.x1.size() != 4)
    throw std::invalid_argument("forward_gradient: stage " + std::to_string(index_ + 1) + " outputs " +
                                shape.str() + "; an auxiliary head needs two streams (N, C, H, W)");
  aux_ = std::make_unique<local_loss>(s_.compute_backend(), s_.blocks().back()->name() + ".aux",
                                      static_cast<int>(shape.x1[1]), options_.aux_width, num_classes,
                                      optimizer, seed);
}

forward_gradient_stage::forward_result forward_gradient_stage::forward(
    const activation& x, int64_t id, int64_t tick, const std::vector<int32_t>& labels,
    const std::vector<stage_tangent>& received,
    const std::function<activation(const activation& z)>& guess_for) {
  backend& be = s_.compute_backend();
  forward_result out;
  if (received.empty()) {
    out.z = s_.forward(x, id, tick);
  } else {
    // The training forward is the JVP along every received tangent at once, stacked along the batch:
    // the blocks run once (the primal bit for bit the forward's, running statistics updated once),
    // each convolution takes all the tangents in one call.
    std::vector<activation> directions;
    for (const stage_tangent& t : received) directions.push_back(t.direction);
    activation stacked;
    out.z = s_.forward_with(x, id, tick, [&](const activation& in) {
      auto [y, y_dot] =
          jvp_through(s_.blocks(), 0, s_.blocks().size(), in, stack_tangents(be, directions), pass::train);
      stacked = std::move(y_dot);
      return y;
    });
    const int64_t m = static_cast<int64_t>(received.size());
    for (int64_t g = 0; g < m; ++g)
      out.tangents.push_back({received[static_cast<std::size_t>(g)].origin, tangent_group(stacked, g, m)});
  }
  if (last_) return out;  // the tangents are the logits': the loss turns them into derivatives
  if (options_.needs_aux_head() && labels.size() != static_cast<std::size_t>(x.batch()))
    throw std::invalid_argument("forward_gradient: stage " + std::to_string(index_ + 1) + " got " +
                                std::to_string(labels.size()) + " labels for micro-batch " +
                                std::to_string(id) + " of " + std::to_string(x.batch()) +
                                " samples (its auxiliary head needs them)");
  activation local_grad;
  if (aux_) local_grad = aux_->step(out.z, labels).grad;
  activation guess = guess_for ? guess_for(out.z)
                     : options_.guess == guess_kind::local
                         ? local_grad
                         : gaussian_guess(be, out.z, seed_, static_cast<int>(index_), id);
  if (options_.target == target_kind::local) {  // the local loss' own gradient, projected at once
    if (guess_for || options_.guess == guess_kind::random) {
      const std::vector<double> d = per_sample_dot(be, local_grad, guess);
      guess = project_on_guess(be, guess, std::vector<float>(d.begin(), d.end()));
    }  // a local guess of a local target is its own projection: ĝ_j = ∇ℓ_j exactly
  } else {
    out.tangents.push_back({static_cast<int32_t>(index_), guess});
  }
  held_[id] = held_guess{std::move(guess), tick};
  std::size_t bytes = 0;
  for (const auto& kept : held_) bytes += kept.second.guess.bytes();
  guess_peak_bytes_ = std::max(guess_peak_bytes_, bytes);
  return out;
}

int64_t forward_gradient_stage::due_at(int64_t tick, int64_t link_delay) const {
  if (!awaits_derivatives()) return -1;
  const int64_t ticks = static_cast<int64_t>(count_ - index_) + link_delay;  // to the loss, and one back
  for (const auto& [id, kept] : held_)
    if (kept.tick + ticks == tick) return id;
  return -1;
}

forward_gradient_stage::backward_result forward_gradient_stage::backward(int64_t id,
                                                                         const std::vector<float>& d,
                                                                         int64_t tick) {
  auto found = held_.find(id);
  if (found == held_.end())
    throw std::logic_error("forward_gradient: stage " + std::to_string(index_ + 1) +
                           " got derivatives of micro-batch " + std::to_string(id) +
                           " but holds no guess for it");
  backward_result out;
  out.estimate =
      d.empty() ? found->second.guess : project_on_guess(s_.compute_backend(), found->second.guess, d);
  held_.erase(found);
  // The stage keeps its input: the output is not needed.
  out.step = s_.backward(activation{}, out.estimate, id, tick);
  return out;
}

void forward_gradient_stage::save(stage_snapshot& into) {
  if (!aux_) return;
  backend& be = s_.compute_backend();
  for (parameter* p : aux_->parameters())
    into.tensors.push_back({"aux/param/" + p->name, be.to_host(p->value)});
  save_optimizer_state(aux_->parameters(), be, "aux/", into.tensors);
  for (const buffer_ref& b : aux_->buffers())
    into.tensors.push_back({"aux/buffer/" + b.name, be.to_host(*b.value)});
}

void forward_gradient_stage::restore(const stage_snapshot& from) {
  if (!aux_) return;
  backend& be = s_.compute_backend();
  std::map<std::string, const tensor*> by_name;
  for (const named_tensor& t : from.tensors) by_name[t.name] = &t.value;
  auto restore = [&](const std::string& name, tensor& dst) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw std::runtime_error("tensor '" + name + "' of stage " + std::to_string(index_ + 1) +
                               "'s auxiliary head is missing: was the checkpoint written by another method "
                               "(training.method forward_gradient keeps its auxiliary heads there)?");
    if (it->second->shape() != dst.shape())
      throw std::runtime_error("tensor '" + name + "' has shape " + it->second->shape_str() +
                               " but the auxiliary head expects " + dst.shape_str() +
                               " (training.forward_gradient.aux_width differs from the checkpoint's?)");
    be.copy(be.from_host(*it->second), dst);
  };
  for (parameter* p : aux_->parameters()) restore("aux/param/" + p->name, p->value);
  restore_optimizer_state(aux_->parameters(), "aux/", by_name, restore);
  for (const buffer_ref& b : aux_->buffers()) restore("aux/buffer/" + b.name, *b.value);
  aux_->optimizer().set_steps_taken(from.optimizer_steps);
}

}  // namespace petra

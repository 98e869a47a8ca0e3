// What a stage holds beyond its arithmetic: its in-flight state as a snapshot takes it (host
// copies out, device copies back in, shapes checked), its parameters and buffers, and their bytes.
#include <stdexcept>
#include <string>

#include "compute/pipeline/stage.hpp"

namespace petra {

stage::inflight stage::export_inflight() {
  if (!taped_.empty())
    throw std::logic_error(
        "stage " + std::to_string(index_) +
        ": the tape of a forward is live while its micro-batch is in flight; snapshot between micro-batches");
  inflight out;
  out.accumulated = accumulated_;
  auto host = [&](const activation& a) {
    return activation{a.x1.defined() ? be_.to_host(a.x1) : tensor{},
                      a.x2.defined() ? be_.to_host(a.x2) : tensor{}};
  };
  for (const pending& p : outstanding_)
    out.outstanding.push_back({p.id, p.version, p.tick, host(p.input), p.kept});
  for (const auto& [version, weights] : stash_) {
    inflight::stash_entry e;
    e.version = version;
    e.users = stash_users_.count(version) ? stash_users_.at(version) : 0;
    for (const tensor& w : weights) e.weights.push_back(be_.to_host(w));
    out.stash.push_back(std::move(e));
  }
  if (accumulated_ > 0)
    for (parameter* p : params_) out.grads.push_back(be_.to_host(p->grad));
  out.stats = stats_;
  out.fallback = fallback_.state();
  return out;
}

void stage::import_inflight(const inflight& from) {
  cancel_rebuild_ahead();
  auto device = [&](const tensor& t) { return t.defined() ? be_.from_host(t) : tensor{}; };
  outstanding_.clear();
  taped_ = tape{};  // a live tape belonged to what is replaced
  for (const auto& e : from.outstanding) {
    if (e.kept && !e.input.x1.defined())
      throw std::runtime_error("stage " + std::to_string(index_) + ": the forward of micro-batch " +
                               std::to_string(e.id) + " kept its input but none was saved");
    outstanding_.push_back({e.id, e.version, e.tick, activation{device(e.input.x1), device(e.input.x2)},
                            e.kept || options_.keep_inputs});
  }
  stash_.clear();
  stash_users_.clear();
  for (const auto& e : from.stash) {
    if (e.weights.size() != params_.size())
      throw std::runtime_error("stage " + std::to_string(index_) + ": a stashed weight version holds " +
                               std::to_string(e.weights.size()) + " tensors, the stage has " +
                               std::to_string(params_.size()) + " parameters");
    std::vector<tensor> weights;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (e.weights[i].shape() != params_[i]->value.shape())
        throw std::runtime_error("stage " + std::to_string(index_) + ": stashed " + params_[i]->name +
                                 " has shape " + e.weights[i].shape_str() + ", the model " +
                                 params_[i]->value.shape_str());
      weights.push_back(device(e.weights[i]));
    }
    stash_.emplace(e.version, std::move(weights));
    if (e.users > 0) stash_users_[e.version] = e.users;
  }
  if (from.accumulated > 0 && from.grads.size() != params_.size())
    throw std::runtime_error("stage " + std::to_string(index_) + ": " + std::to_string(from.accumulated) +
                             " backwards accumulated but " + std::to_string(from.grads.size()) +
                             " gradients saved for " + std::to_string(params_.size()) + " parameters");
  for (std::size_t i = 0; i < from.grads.size(); ++i) {
    if (from.grads[i].shape() != params_[i]->grad.shape())
      throw std::runtime_error("stage " + std::to_string(index_) + ": saved gradient of " + params_[i]->name +
                               " has shape " + from.grads[i].shape_str() + ", the model " +
                               params_[i]->grad.shape_str());
    be_.copy(be_.from_host(from.grads[i]), params_[i]->grad);
  }
  if (from.accumulated == 0)
    for (parameter* p : params_) be_.fill_zero(p->grad);
  accumulated_ = from.accumulated;
  stats_ = from.stats;
  // A stage that cannot fall back (another method, or the fallback off on resume) rebuilds as before;
  // the entries taken keeping inputs still take them.
  if (fallback_.enabled()) fallback_.restore(from.fallback);
}

std::vector<parameter*> stage::parameters() {
  cancel_rebuild_ahead();  // the caller may write the weights
  return params_;
}

std::vector<buffer_ref> stage::buffers() {
  cancel_rebuild_ahead();
  std::vector<buffer_ref> out;
  for (auto& b : blocks_)
    for (const buffer_ref& r : b->buffers()) out.push_back(r);
  return out;
}

std::size_t stage::parameter_bytes() {
  std::size_t n = 0;
  for (parameter* p : params_) n += p->value.bytes();
  return n;
}

std::size_t stage::optimizer_state_bytes() {
  std::size_t n = 0;
  for (parameter* p : params_)
    n += p->grad.bytes() + p->momentum.bytes() + (p->second_moment.defined() ? p->second_moment.bytes() : 0);
  return n;
}

std::size_t stage::buffer_bytes() {
  std::size_t n = 0;
  for (const buffer_ref& r : buffers()) n += r.value->bytes();
  return n;
}

}  // namespace petra

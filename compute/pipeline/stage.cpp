// Stage: forward, rebuild-or-pop backward (plain or overlapped), weight stash, optimizer cadence.
#include "compute/pipeline/stage.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "compute/pipeline/overlapped_backward.hpp"

namespace petra {
namespace {

bool all_reversible(const std::vector<std::unique_ptr<block>>& blocks, int index) {
  if (blocks.empty()) throw std::invalid_argument("stage " + std::to_string(index) + " has no blocks");
  for (const auto& b : blocks)
    if (!b->reversible()) return false;
  return true;
}

std::vector<parameter*> collect_parameters(const std::vector<std::unique_ptr<block>>& blocks) {
  std::vector<parameter*> out;
  for (const auto& b : blocks)
    for (parameter* p : b->parameters()) out.push_back(p);
  return out;
}

}  // namespace

stage::stage(int index, std::vector<std::unique_ptr<block>> blocks, backend& be,
             const optimizer_settings& optimizer, stage_options options)
    : index_(index),
      blocks_(std::move(blocks)),
      be_(be),
      options_(options),
      reversible_(all_reversible(blocks_, index)),
      params_(collect_parameters(blocks_)),
      optimizer_(be, optimizer, params_) {
  if (!reversible_ || options_.tape_forward) options_.keep_inputs = true;
  // Only a stage that rebuilds its inputs can fall back to keeping them.
  if (!options_.keep_inputs && !options_.taped) fallback_ = fallback_policy(options_.max_inversion_error);
}

stage::~stage() {
  try {
    cancel_rebuild_ahead();
  } catch (...) {  // its error belongs to a backward that will not come
  }
}

activation stage::forward(const activation& x, int64_t id, int64_t tick) {
  if (options_.taped || options_.tape_forward) {  // the backward (next) takes this forward's tape
    if (!outstanding_.empty())
      throw std::logic_error(
          "stage " + std::to_string(index_) + ": " + (options_.taped ? "backprop forward" : "forward") +
          " of micro-batch " + std::to_string(id) + " while micro-batch " +
          std::to_string(outstanding_.front().id) +
          " is outstanding: " + (options_.taped ? "backprop" : "a stage that tapes its forward") +
          " keeps one micro-batch in flight");
    activation h = forward_taped(x);
    // The last stage keeps its input too: it sends it back exact.
    outstanding_.push_back(
        {id, weight_version(), tick, options_.tape_forward ? x : activation{}, options_.tape_forward});
    update_fifo_stats();
    return h;
  }
  return forward_with(x, id, tick, [this](const activation& in) {
    activation h = in;
    for (auto& b : blocks_) h = b->forward(h, pass::train, nullptr);
    return h;
  });
}

activation stage::forward_with(const activation& x, int64_t id, int64_t tick,
                               const std::function<activation(const activation&)>& through) {
  if (options_.taped || options_.tape_forward)
    throw std::logic_error("stage " + std::to_string(index_) +
                           ": forward_with on a stage whose forward keeps its tape");
  if (options_.stash_weights) stash_current_weights();
  activation h = through(x);
  // The mode is decided per forward, and the entry records it: its backward follows it whatever the
  // fallback decides meanwhile.
  const bool keep = options_.keep_inputs || fallback_.keeping();
  outstanding_.push_back({id, weight_version(), tick, keep || sampled(id) ? x : activation{}, keep});
  ++stats_.forwards;
  if (keep && !options_.keep_inputs) ++stats_.fallback_forwards;
  update_fifo_stats();
  return h;
}

stage::backward_result stage::backward(const activation& output, const activation& output_grad, int64_t id,
                                       int64_t tick,
                                       const std::function<void(const activation&)>& input_ready) {
  // A rebuild started ahead is this backward's when it began from these tensors for this id with
  // the weights of now; any other is dropped before anything else runs.
  ahead_taken ahead{lane_.get(), nullptr};
  if (ahead_ && ahead_->id == id && ahead_->version == weight_version() &&
      output.x1.shares_storage_with(ahead_->output.x1) &&
      (!output.x2.defined() ? !ahead_->output.x2.defined()
                            : output.x2.shares_storage_with(ahead_->output.x2)))
    ahead.state = std::move(ahead_);
  else
    cancel_rebuild_ahead();
  if (outstanding_.empty())
    throw std::logic_error("stage " + std::to_string(index_) + ": backward of micro-batch " +
                           std::to_string(id) + " but no forward is outstanding");
  pending entry = std::move(outstanding_.front());
  outstanding_.pop_front();
  if (entry.id != id)
    throw std::logic_error("stage " + std::to_string(index_) + ": backward of micro-batch " +
                           std::to_string(id) + " but the oldest outstanding forward is " +
                           std::to_string(entry.id));
  // Measured before this backward's own optimizer step: the steps taken since the forward.
  ++stats_.delay_ticks[tick - entry.tick];
  ++stats_.staleness_steps[weight_version() - entry.version];
  backward_result r;
  r.forward_version = entry.version;
  // A stage that tapes its forward runs the same ops on the same data as the kept-input path
  // below, once (that path takes an entry restored without its tape).
  if (options_.taped || (options_.tape_forward && !taped_.empty())) {
    r.input = entry.input;  // the last stage's exact input; none for backprop
    r.input_grad = backward_taped(output_grad);
    step_if_due(r);
    return r;
  }
  if (options_.stash_weights) swap_in(entry.version);
  if (entry.kept) {  // (a stage that tapes its forward: an entry restored without its tape)
    tape t;
    activation h = entry.input;
    for (auto& b : blocks_) h = b->forward(h, pass::recompute, &t);
    activation d = output_grad;
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) d = (*it)->backward(t, d);
    r.input = entry.input;  // exact: rebuild errors restart from here
    r.input_grad = d;
    // Falling back, the stage still measures its rebuild (without its gradients), to know when the
    // rebuilds are accurate again.
    if (sampled(entry.id)) {
      activation x = output;
      for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) x = (*it)->inverse(x);
      record_inversion_error(x, entry.input);
    }
  } else {
    if (lane_) {
      if (ahead.state) ++stats_.rebuilds_ahead;
      std::tie(r.input, r.input_grad) =
          overlapped_backward(blocks_, be_, *lane_, output, output_grad,
                              ahead.state ? &ahead.state->started : nullptr, input_ready);
    } else {
      activation y = output, d = output_grad;
      for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it)
        std::tie(y, d) = (*it)->backward_from_output(y, d);
      r.input = y;
      r.input_grad = d;
    }
    if (entry.input.defined()) record_inversion_error(r.input, entry.input);
  }
  if (options_.stash_weights) {
    swap_in(entry.version);  // swap back: the live weights return
    release_stash(entry.version);
  }
  ++stats_.backwards;
  step_if_due(r);
  return r;
}

void stage::overlap_rebuild(std::unique_ptr<backend> rebuild) {
  cancel_rebuild_ahead();
  if (!can_overlap_rebuild())
    throw std::logic_error(
        "stage " + std::to_string(index_) +
        ": only a stage that rebuilds its input can overlap its rebuilds (this one keeps its inputs)");
  if (!rebuild || rebuild->where() != be_.where())
    throw std::invalid_argument("stage " + std::to_string(index_) + ": the rebuild stream must be on " +
                                be_.where().str() + ", the stage's device");
  lane_ = std::make_unique<rebuild_lane>(std::move(rebuild));
}

bool stage::rebuild_ahead(const activation& output, int64_t id) {
  if (!lane_ || ahead_ || options_.stash_weights || !output.defined() || outstanding_.empty() ||
      outstanding_.front().id != id || outstanding_.front().kept)
    return false;
  auto a = std::make_unique<ahead_state>();
  a->id = id;
  a->version = weight_version();
  a->output = output;
  start_last_rebuild(blocks_, be_, *lane_, output, a->started);
  ahead_ = std::move(a);
  return true;
}

stage::ahead_taken::~ahead_taken() {
  if (!state) return;
  try {
    lane->wait();  // its task writes into `state`: done before it goes (at once after the backward's wait)
  } catch (...) {  // an error on the way out: the one already thrown is reported
  }
}

void stage::cancel_rebuild_ahead() {
  if (!ahead_) return;
  const std::unique_ptr<ahead_state> dropped = std::move(ahead_);  // goes after the wait, whatever it throws
  lane_->wait();
}

activation stage::forward_taped(const activation& x) {
  if (!taped_.empty())
    throw std::logic_error("stage " + std::to_string(index_) + ": taped forward while a tape is live");
  activation h = x;
  for (auto& b : blocks_) h = b->forward(h, pass::train, &taped_);
  ++stats_.forwards;
  return h;
}

activation stage::backward_taped(const activation& output_grad) {
  activation d = output_grad;
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) d = (*it)->backward(taped_, d);
  if (!taped_.empty())
    throw std::logic_error("stage " + std::to_string(index_) + ": tape not consumed by backward");
  ++stats_.backwards;
  return d;
}

activation stage::evaluate(const activation& x) {
  activation h = x;
  for (auto& b : blocks_) h = b->forward(h, pass::eval, nullptr);
  return h;
}

activation stage::calibrate(const activation& x) {
  activation h = x;
  for (auto& b : blocks_) h = b->forward(h, pass::calibrate, nullptr);
  return h;
}

void stage::step_if_due(backward_result& r) {
  if (++accumulated_ < optimizer_.settings().accumulation) return;
  accumulated_ = 0;
  r.stepped = true;
  r.step_begin = std::chrono::steady_clock::now();
  optimizer_.step();
  r.step_end = std::chrono::steady_clock::now();
}

void stage::stash_current_weights() {
  const int64_t v = weight_version();
  if (!stash_.count(v)) {
    std::vector<tensor> copy;
    copy.reserve(params_.size());
    for (parameter* p : params_) {
      tensor c = be_.empty(p->value.shape());
      be_.copy(p->value, c);
      copy.push_back(c);
    }
    stash_.emplace(v, std::move(copy));
    std::size_t bytes = 0;
    for (auto& kv : stash_)
      for (auto& t : kv.second) bytes += t.bytes();
    stats_.stash_peak = std::max(stats_.stash_peak, stash_.size());
    stats_.stash_peak_bytes = std::max(stats_.stash_peak_bytes, bytes);
  }
  ++stash_users_[v];
}

void stage::swap_in(int64_t version) {
  auto it = stash_.find(version);
  if (it == stash_.end())
    throw std::logic_error("stage " + std::to_string(index_) + ": weight version " + std::to_string(version) +
                           " is not stashed");
  for (std::size_t i = 0; i < params_.size(); ++i) std::swap(params_[i]->value, it->second[i]);
}

void stage::release_stash(int64_t version) {
  if (--stash_users_[version] == 0) {
    stash_users_.erase(version);
    stash_.erase(version);
  }
}

std::vector<int64_t> stage::outstanding_ids() const {
  std::vector<int64_t> ids;
  for (const pending& p : outstanding_) ids.push_back(p.id);
  return ids;
}

std::vector<int64_t> stage::drop(const std::function<bool(int64_t)>& lost) {
  cancel_rebuild_ahead();
  std::vector<int64_t> dropped;
  std::deque<pending> kept;
  for (pending& p : outstanding_) {
    if (!lost(p.id)) {
      kept.push_back(std::move(p));
      continue;
    }
    dropped.push_back(p.id);
    if (options_.stash_weights) release_stash(p.version);
  }
  outstanding_ = std::move(kept);
  if ((options_.taped || options_.tape_forward) && !dropped.empty()) taped_ = tape{};
  return dropped;
}

void stage::update_fifo_stats() {
  std::size_t held = 0, bytes = 0;
  for (const pending& p : outstanding_) {
    if (!p.input.defined()) continue;
    ++held;
    bytes += p.input.bytes();
  }
  stats_.fifo_peak = std::max(stats_.fifo_peak, held);
  stats_.fifo_peak_bytes = std::max(stats_.fifo_peak_bytes, bytes);
}

void stage_stats::add(const stage_stats& later) {
  forwards += later.forwards;
  backwards += later.backwards;
  for (const auto& [ticks, count] : later.delay_ticks) delay_ticks[ticks] += count;
  for (const auto& [steps, count] : later.staleness_steps) staleness_steps[steps] += count;
  fifo_peak = std::max(fifo_peak, later.fifo_peak);
  fifo_peak_bytes = std::max(fifo_peak_bytes, later.fifo_peak_bytes);
  stash_peak = std::max(stash_peak, later.stash_peak);
  stash_peak_bytes = std::max(stash_peak_bytes, later.stash_peak_bytes);
  inversion_samples += later.inversion_samples;
  inversion_error_sum += later.inversion_error_sum;
  inversion_error_max = std::max(inversion_error_max, later.inversion_error_max);
  fallback_forwards += later.fallback_forwards;
  fallback_switches += later.fallback_switches;
  rebuilds_ahead += later.rebuilds_ahead;
}

void stage::continue_stats(const stage_stats& earlier) {
  stage_stats total = earlier;
  total.add(stats_);
  stats_ = std::move(total);
}

void stage::reset_stats() {
  stats_ = stage_stats{};
  update_fifo_stats();
  if (!stash_.empty()) {
    std::size_t bytes = 0;
    for (auto& kv : stash_)
      for (auto& t : kv.second) bytes += t.bytes();
    stats_.stash_peak = stash_.size();
    stats_.stash_peak_bytes = bytes;
  }
}

bool stage::sampled(int64_t id) const {
  return !options_.keep_inputs && !options_.taped && options_.inversion_sample_every > 0 &&
         id % options_.inversion_sample_every == 0;
}

void stage::record_inversion_error(const activation& rebuilt, const activation& truth) {
  const double e = inversion_error(rebuilt, truth);
  ++stats_.inversion_samples;
  stats_.inversion_error_sum += e;
  stats_.inversion_error_max = std::max(stats_.inversion_error_max, e);
  if (fallback_.observe(e)) ++stats_.fallback_switches;
}

double stage::inversion_error(const activation& rebuilt, const activation& truth) {
  double diff = 0.0, norm = 0.0;
  auto add = [&](const tensor& a, const tensor& b) {
    const tensor ha = be_.to_host(a), hb = be_.to_host(b);
    const float* pa = ha.data();
    const float* pb = hb.data();
    for (int64_t i = 0; i < ha.numel(); ++i) {
      const double d = static_cast<double>(pa[i]) - pb[i];
      diff += d * d;
      norm += static_cast<double>(pb[i]) * pb[i];
    }
  };
  add(rebuilt.x1, truth.x1);
  if (truth.two_streams()) add(rebuilt.x2, truth.x2);
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

}  // namespace petra

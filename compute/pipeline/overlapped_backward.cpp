// The overlapped backward: the schedule of rebuilds and gradients on two streams, and the
// hand-overs between them.
#include "compute/pipeline/overlapped_backward.hpp"

#include <stdexcept>

namespace petra {
namespace {

/// `t`, made or imported by `from`, made usable by `to` (same device: `to` waits for `from`'s point).
tensor hand_over(backend& from, backend& to, const tensor& t) {
  return to.import(from.export_for(t, to.where()));
}

activation hand_over(backend& from, backend& to, const activation& a) {
  return {hand_over(from, to, a.x1), hand_over(from, to, a.x2)};
}

/// Waits, until the lane's task is done, on the way out of a scope that may throw: the task
/// refers to that scope's tapes and activations.
class lane_guard {
 public:
  explicit lane_guard(rebuild_lane& lane) : lane_(lane) {}
  ~lane_guard() {
    if (!armed_) return;
    try {
      lane_.wait();
    } catch (...) {  // the error already on its way out is the one to report
    }
  }
  void wait() {
    armed_ = false;
    lane_.wait();
  }
  lane_guard(const lane_guard&) = delete;
  lane_guard& operator=(const lane_guard&) = delete;

 private:
  rebuild_lane& lane_;
  bool armed_ = true;
};

/// The lane reads the weights as the stage's stream left them (after its last optimizer step, a
/// swapped-in stash): a fresh point of the stage's stream makes it wait for all that, and importing
/// each weight lets the lane's stream use it (a sim device checks; elsewhere it is the same tensor).
void hand_weights_to_lane(const std::vector<std::unique_ptr<block>>& blocks, backend& be, backend& rb) {
  hand_over(be, rb, be.empty({1}));
  for (const auto& b : blocks)
    for (parameter* p : b->parameters()) hand_over(be, rb, p->value);
}

}  // namespace

void start_last_rebuild(const std::vector<std::unique_ptr<block>>& blocks, backend& be, rebuild_lane& lane,
                        const activation& y, rebuild_started& out) {
  if (blocks.empty()) throw std::invalid_argument("start_last_rebuild: no blocks");
  backend& rb = lane.compute();
  hand_weights_to_lane(blocks, be, rb);
  const activation y_lane = hand_over(be, rb, y);
  block& last = *blocks.back();
  lane.launch([&out, &last, &rb, y_lane] { out.input = last.rebuild_input(rb, y_lane, out.taped); });
}

std::pair<activation, activation> overlapped_backward(
    const std::vector<std::unique_ptr<block>>& blocks, backend& be, rebuild_lane& lane, const activation& y,
    const activation& dy, rebuild_started* started,
    const std::function<void(const activation&)>& input_ready) {
  if (blocks.empty()) throw std::invalid_argument("overlapped_backward: no blocks");
  backend& rb = lane.compute();
  const std::size_t n = blocks.size();
  std::vector<tape> tapes(n);
  std::vector<activation> inputs(n);  // inputs[i]: block i's rebuilt input, on the lane's stream
  if (started) {
    lane.wait();  // the task began with the weights this backward reads (the caller's word)
    tapes[n - 1] = std::move(started->taped);
    inputs[n - 1] = std::move(started->input);
  } else {
    hand_weights_to_lane(blocks, be, rb);
    inputs[n - 1] = blocks[n - 1]->rebuild_input(rb, hand_over(be, rb, y), tapes[n - 1]);
  }
  activation d = dy, x;
  for (std::size_t i = n; i-- > 0;) {
    tapes[i].remap([&](const tensor& t) { return hand_over(rb, be, t); });
    if (i == 0) {
      x = hand_over(rb, be, inputs[0]);
      if (input_ready) input_ready(x);
    }
    lane_guard guard(lane);
    if (i > 0)
      lane.launch([&, i] { inputs[i - 1] = blocks[i - 1]->rebuild_input(rb, inputs[i], tapes[i - 1]); });
    d = blocks[i]->backward(tapes[i], d);
    guard.wait();
    if (!tapes[i].empty())
      throw std::logic_error(blocks[i]->name() + ": its backward left " + std::to_string(tapes[i].size()) +
                             " tape entries of its rebuild");
    if (i > 0) inputs[i] = activation{};  // the rebuild of the block before was its last reader
  }
  return {x, d};
}

}  // namespace petra

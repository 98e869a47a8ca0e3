// Forward mode through a run of blocks and to the loss.
#include "compute/pipeline/forward_mode.hpp"

#include <stdexcept>
#include <string>

#include "compute/pipeline/stage.hpp"

namespace petra {

std::pair<activation, activation> jvp_through(const std::vector<std::unique_ptr<block>>& blocks,
                                              std::size_t first, std::size_t last, const activation& x,
                                              const activation& x_dot, pass mode,
                                              const parameter_tangents& theta_dot) {
  if (first > last || last > blocks.size())
    throw std::invalid_argument("jvp_through: blocks [" + std::to_string(first) + ", " +
                                std::to_string(last) + ") is not a run of the " +
                                std::to_string(blocks.size()) + " blocks");
  std::pair<activation, activation> h{x, x_dot};
  for (std::size_t i = first; i < last; ++i) h = blocks[i]->jvp(h.first, h.second, mode, nullptr, theta_dot);
  return h;
}

std::pair<activation, activation> stage_jvp(stage& s, const activation& x, const activation& x_dot, pass mode,
                                            const parameter_tangents& theta_dot) {
  return jvp_through(s.blocks(), 0, s.blocks().size(), x, x_dot, mode, theta_dot);
}

loss_jvp loss_jvp_from(backend& be, const std::vector<std::unique_ptr<block>>& blocks, std::size_t first,
                       const activation& x, const activation& x_dot, const std::vector<int32_t>& labels,
                       pass mode, const parameter_tangents& theta_dot) {
  if (first >= blocks.size() || blocks.back()->kind() != "head")
    throw std::invalid_argument("loss_jvp_from: blocks from " + std::to_string(first) +
                                " must be a non-empty run ending with the head (the logits)");
  auto [logits, logits_dot] = jvp_through(blocks, first, blocks.size(), x, x_dot, mode, theta_dot);
  return softmax_cross_entropy_jvp(be, logits.x1, logits_dot.x1, labels);
}

}  // namespace petra

// The loss side's part of a cut as JSON.
#include "training/loss_cut.hpp"

#include <stdexcept>

#include "training/json_record.hpp"

namespace petra::training {

std::string encode(const loss_cut& part) { return json_record::write(part).dump(); }

loss_cut decode_loss_cut(const std::string& text) {
  try {
    return json_record::read<loss_cut>(nlohmann::json::parse(text));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the loss side's part of the cut is damaged: ") + e.what());
  }
}

std::optional<loss_cut> loss_cut_assembly::stage_marker(int64_t tick, loss_cut part) {
  if (loader_done_.erase(tick) > 0) return part;
  held_[tick] = std::move(part);
  return std::nullopt;
}

std::optional<loss_cut> loss_cut_assembly::loader_marker(int64_t tick) {
  auto it = held_.find(tick);
  if (it == held_.end()) {
    loader_done_.insert(tick);
    return std::nullopt;
  }
  loss_cut part = std::move(it->second);
  held_.erase(it);
  return part;
}

void loss_cut_assembly::labels_came(int32_t eval_epoch, int64_t id, const std::vector<int32_t>& labels) {
  for (auto& [tick, part] : held_) {
    bool held = false;
    for (const loss_cut::labels_entry& l : part.labels)
      held = held || (l.eval_epoch == eval_epoch && l.id == id);
    if (!held) part.labels.push_back({eval_epoch, id, labels});
  }
}

void loss_cut_assembly::abandon_upto(int64_t tick) {
  held_.erase(held_.begin(), held_.upper_bound(tick));
  loader_done_.erase(loader_done_.begin(), loader_done_.upper_bound(tick));
}

void loss_cut_assembly::clear() {
  held_.clear();
  loader_done_.clear();
}

}  // namespace petra::training

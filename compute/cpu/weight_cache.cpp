// Converted weights kept while their buffer's write version says they are current.
#include "compute/cpu/weight_cache.hpp"

#include <algorithm>

namespace petra {

namespace {

/// True when both handles share one control block: the same buffer, whatever its address.
bool same_owner(const std::weak_ptr<storage>& kept, const std::shared_ptr<storage>& now) {
  return !kept.owner_before(now) && !now.owner_before(kept);
}

}  // namespace

const dnnl::memory& weight_cache::find(const tensor& weights, const dnnl::memory::desc& layout,
                                       const dnnl::engine& eng, const convert_fn& convert) {
  const std::shared_ptr<storage>& owner = weights.buffer();
  const float* values = weights.data();
  // Read before converting: a write after this read advances the version past it.
  const uint64_t version = owner->write_version();
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) {
    return e.values == values && same_owner(e.owner, owner) && e.layout == layout;
  });
  if (it != entries_.end() && it->version == version) {
    ++reuses_;
    return it->copy;
  }
  if (it == entries_.end()) {
    // Copies of buffers that are gone can never be used again.
    entries_.erase(
        std::remove_if(entries_.begin(), entries_.end(), [](const entry& e) { return e.owner.expired(); }),
        entries_.end());
    entry fresh;
    fresh.owner = owner;
    fresh.values = values;
    fresh.layout = layout;
    fresh.bytes =
        tensor::empty({static_cast<int64_t>((layout.get_size() + sizeof(float) - 1) / sizeof(float))});
    fresh.copy = dnnl::memory(layout, eng, fresh.bytes.data());
    entries_.push_back(std::move(fresh));
    it = entries_.end() - 1;
  }
  // Until the conversion has completed the entry must not claim any version: a conversion that
  // throws leaves it stale (versions only grow) or, when new, with a version no write can reach.
  it->version = ~uint64_t{0};
  convert(it->copy);
  it->version = version;
  ++conversions_;
  return it->copy;
}

}  // namespace petra

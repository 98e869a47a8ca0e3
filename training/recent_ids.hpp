// The micro-batch ids an actor has taken in, to discard a duplicate: only the newest are kept.
// Remembering every id of a phase grew a stage's memory without end in a long async run (a tree
// node per id and link; the nodes, scattered among the activations' large blocks, kept the
// allocator from reusing them: RSS grew ~19 KB per micro-batch on the tiny preset). A bounded
// tree still allocated a node per id and freed the oldest, scattering small blocks among the
// large ones for the whole run; the ids now sit in one sorted array reserved at construction, so
// remembering allocates nothing after it (ids arrive nearly in order: an insert is almost always
// at the end, and forgetting the smallest moves the array's ~32 KB once per id).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace petra::training {

/// How many ids are remembered: far more than a stage ever holds in flight (its mailbox and
/// FIFO are bounded by the loader's credits), so a duplicate is always still remembered when it
/// comes; one that came later than this many newer ids would pass as new.
constexpr std::size_t remembered_ids = 4096;

/// A set of the newest `memory` ids: inserting beyond it forgets the smallest.
class recent_ids {
 public:
  explicit recent_ids(std::size_t memory = remembered_ids) : memory_(memory < 1 ? 1 : memory) {
    ids_.reserve(memory_ + 1);
  }

  /// True if `id` was not remembered (it is from now on, unless it is older than every id kept
  /// while the memory is full).
  bool insert(int64_t id) {
    const auto at = std::lower_bound(ids_.begin(), ids_.end(), id);
    if (at != ids_.end() && *at == id) return false;
    ids_.insert(at, id);
    if (ids_.size() > memory_) ids_.erase(ids_.begin());
    return true;
  }
  /// Forgets `id` (a re-issued micro-batch is new again).
  void erase(int64_t id) {
    const auto at = std::lower_bound(ids_.begin(), ids_.end(), id);
    if (at != ids_.end() && *at == id) ids_.erase(at);
  }
  bool contains(int64_t id) const { return std::binary_search(ids_.begin(), ids_.end(), id); }
  void clear() { ids_.clear(); }
  std::size_t size() const { return ids_.size(); }

 private:
  std::size_t memory_;
  std::vector<int64_t> ids_;  // sorted, at most memory_ (+ 1 while inserting)
};

}  // namespace petra::training

// The micro-batch ids an actor has taken in, to discard a duplicate: only the newest are kept.
// Remembering every id of a phase grew a stage's memory without end in a long async run (a tree
// node per id and link; the nodes, scattered among the activations' large blocks, kept the
// allocator from reusing them: RSS grew ~19 KB per micro-batch on the tiny preset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>

namespace petra::training {

/// How many ids are remembered: far more than a stage ever holds in flight (its mailbox and
/// FIFO are bounded by the loader's credits), so a duplicate is always still remembered when it
/// comes; one that came later than this many newer ids would pass as new.
constexpr std::size_t remembered_ids = 4096;

/// A set of the newest `memory` ids: inserting beyond it forgets the smallest.
class recent_ids {
 public:
  explicit recent_ids(std::size_t memory = remembered_ids) : memory_(memory < 1 ? 1 : memory) {}

  /// True if `id` was not remembered (it is from now on, unless it is older than every id kept
  /// while the memory is full).
  bool insert(int64_t id) {
    if (!ids_.insert(id).second) return false;
    if (ids_.size() > memory_) ids_.erase(ids_.begin());
    return true;
  }
  /// Forgets `id` (a re-issued micro-batch is new again).
  void erase(int64_t id) { ids_.erase(id); }
  bool contains(int64_t id) const { return ids_.count(id) != 0; }
  void clear() { ids_.clear(); }
  std::size_t size() const { return ids_.size(); }

 private:
  std::size_t memory_;
  std::set<int64_t> ids_;
};

}  // namespace petra::training

// Tape byte accounting.
#include "compute/tape.hpp"

#include <set>

namespace petra {

std::size_t tape::bytes() const {
  std::set<const void*> seen;
  std::size_t total = 0;
  for (const tensor& t : stack_)
    if (t.defined() && seen.insert(t.buffer().get()).second) total += t.buffer()->bytes();
  return total;
}

}  // namespace petra

// Tape: what a forward keeps for its backward, as a stack. A forward pushes the
// tensors its backward needs; the backward pops them in exactly the reverse order.
#pragma once

#include <stdexcept>
#include <vector>

#include "compute/tensor.hpp"

namespace petra {

class tape {
 public:
  void push(tensor t) { stack_.push_back(std::move(t)); }
  tensor pop() {
    if (stack_.empty())
      throw std::logic_error("tape::pop on an empty tape: a backward popped more than its forward pushed");
    tensor t = std::move(stack_.back());
    stack_.pop_back();
    return t;
  }
  bool empty() const { return stack_.empty(); }
  /// Replaces every entry by `f(entry)`: hands a tape made on one stream over to another.
  template <class F>
  void remap(F&& f) {
    for (tensor& t : stack_) t = f(t);
  }
  std::size_t size() const { return stack_.size(); }
  /// Bytes held, counting each distinct buffer once.
  std::size_t bytes() const;

 private:
  std::vector<tensor> stack_;
};

}  // namespace petra

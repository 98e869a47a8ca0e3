// What reaches a stage before its handler computes (private to actors/): each message sorted
// against the stage's phase and wiring (training/arrival.hpp); one for a phase not planned here
// yet waits in the inbox until that phase's plan comes, in the order it came. No actor system:
// tested in tests/actors/stage_units_test.cpp.
#pragma once

#include <utility>
#include <vector>

#include "messages/messages.hpp"
#include "training/arrival.hpp"

namespace petra::detail {

class stage_inbox {
 public:
  /// Where message `in` stands for a stage that knows `here`; an early one is kept (moved from).
  template <class Message>
  training::arrival sort(Message& in, const training::arrival_context& here) {
    const training::arrival a = training::classify_arrival(here, in.s.sender, in.s.generation, in.s.phase);
    if (a == training::arrival::early) queue(in).push_back(std::move(in));
    return a;
  }
  /// The early messages of each link, in the order they came; the inbox is empty after.
  struct early {
    std::vector<messages::forward_data> forwards;
    std::vector<messages::backward_data> backwards;
    std::vector<messages::derivatives_data> derivatives;
  };
  early take() {
    early out{std::move(forwards_), std::move(backwards_), std::move(derivatives_)};
    forwards_.clear();
    backwards_.clear();
    derivatives_.clear();
    return out;
  }
  bool empty() const { return forwards_.empty() && backwards_.empty() && derivatives_.empty(); }

 private:
  std::vector<messages::forward_data>& queue(messages::forward_data&) { return forwards_; }
  std::vector<messages::backward_data>& queue(messages::backward_data&) { return backwards_; }
  std::vector<messages::derivatives_data>& queue(messages::derivatives_data&) { return derivatives_; }

  std::vector<messages::forward_data> forwards_;
  std::vector<messages::backward_data> backwards_;
  std::vector<messages::derivatives_data> derivatives_;
};

}  // namespace petra::detail

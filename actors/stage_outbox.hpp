// What a stage sends besides its neighbours' activations and gradients (private to actors/): the
// links it sends on, and what goes to the coordinator — injected faults (counted: the report of
// the phase says how many went), failures, the phase's end, and epoch reports, which wait behind a
// snapshot's part that has not gone yet (async; actors/stage_async_cut.cpp).
#pragma once

#include <caf/all.hpp>
#include <string>
#include <utility>
#include <vector>

#include "messages/interfaces.hpp"
#include "messages/messages.hpp"

namespace petra::detail {

class stage_outbox {
 public:
  messages::stage_links links;

  /// A new phase: no fault reported yet, no report held.
  void begin_phase() {
    faults_sent_ = 0;
    stop_holding();
  }
  /// Fault events sent to the coordinator since the phase began.
  int64_t faults_sent() const { return faults_sent_; }

  template <class Self>
  void fault(Self* self, int32_t stage, messages::fault_kind kind, int32_t generation) {
    ++faults_sent_;
    self->send(links.coordinator, messages::fault_event{stage, kind, generation});
  }
  /// An epoch's report: to the coordinator, or held while a snapshot's part has not gone.
  template <class Self>
  void epoch_report(Self* self, messages::stage_epoch_report r) {
    if (holding_)
      held_.push_back(std::move(r));
    else
      self->send(links.coordinator, std::move(r));
  }
  /// From now on epoch reports wait (a snapshot's part is pending); returns those held so far.
  std::vector<messages::stage_epoch_report> hold() {
    std::vector<messages::stage_epoch_report> before = take_held();
    holding_ = true;
    return before;
  }
  /// The reports held, taken (the holding goes on).
  std::vector<messages::stage_epoch_report> take_held() {
    std::vector<messages::stage_epoch_report> out = std::move(held_);
    held_.clear();
    return out;
  }
  /// Reports go straight out again; any held are dropped (taken first where they must go).
  void stop_holding() {
    holding_ = false;
    held_.clear();
  }

 private:
  int64_t faults_sent_ = 0;
  bool holding_ = false;
  std::vector<messages::stage_epoch_report> held_;  // made since the latest pending part
};

}  // namespace petra::detail

// The units of a stage actor's state, without an actor system: the phase (what passed, which epoch
// a backward ends), the wait for the loss, the inbox (admit: early messages kept for their phase,
// in order) and the outbox (faults counted, epoch reports held behind a pending snapshot part).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "actors/stage_inbox.hpp"
#include "actors/stage_outbox.hpp"
#include "actors/stage_phase.hpp"

using namespace petra;
using namespace petra::detail;
using namespace petra::messages;
using petra::training::arrival;

namespace {

phase_plan plan_of(int64_t phase, int64_t micro_batches, int64_t per_epoch, int64_t eval_items = 0) {
  phase_plan p;
  p.phase = phase;
  p.micro_batches = micro_batches;
  p.per_epoch = per_epoch;
  p.eval_items = eval_items;
  return p;
}

/// Stands in for an actor: what it was asked to send, by kind.
struct recording_self {
  std::vector<std::string> sent;
  template <class Handle, class Message>
  void send(const Handle&, const Message& m) {
    if constexpr (std::is_same_v<Message, stage_epoch_report>)
      sent.push_back("epoch " + std::to_string(m.epoch));
    else
      sent.push_back("fault");
  }
};

forward_data forward_of(int32_t sender, int64_t phase, int64_t id) {
  forward_data f;
  f.s.sender = sender;
  f.s.phase = phase;
  f.s.micro_batch = id;
  return f;
}

}  // namespace

TEST_CASE("stage_phase: an epoch's report is due once at its last micro-batch's backward") {
  stage_phase ph;
  ph.begin(plan_of(3, 8, 4));
  CHECK(ph.running);
  CHECK_FALSE(ph.epoch_ended_by(2).has_value());
  CHECK(ph.epoch_ended_by(3) == 0);
  CHECK_FALSE(ph.epoch_ended_by(3).has_value());  // a re-issue of micro-batch 3 ends nothing again
  CHECK(ph.epoch_ended_by(7) == 1);
  ph.begin(plan_of(4, 8, 4));  // a new phase reports its epochs again
  CHECK(ph.epoch_ended_by(3) == 0);
  ph.begin(plan_of(5, 8, 0));  // no epochs: no report
  CHECK_FALSE(ph.epoch_ended_by(3).has_value());
}

TEST_CASE(
    "stage_phase: a phase has passed when every backward and evaluation did and begin starts from zero") {
  stage_phase ph;
  ph.begin(plan_of(1, 2, 2, 1));
  ph.backwards = 2;
  CHECK_FALSE(ph.all_passed());
  ph.evals = 1;
  CHECK(ph.all_passed());
  ph.tick = 9, ph.last_forwarded = 5;
  ph.begin(plan_of(2, 2, 2, 1));
  CHECK(ph.tick == 0);
  CHECK(ph.last_forwarded == -1);
  CHECK(ph.backwards == 0);
  CHECK(ph.evals == 0);
  CHECK_FALSE(ph.all_passed());
}

TEST_CASE("loss_wait: only the awaited micro-batch answers and a drop forgets it") {
  loss_wait w;
  CHECK_FALSE(w.answered_by(-1));
  w.hold(activation{}, 7);
  CHECK(w.answered_by(7));
  CHECK_FALSE(w.answered_by(6));
  w.drop();
  CHECK_FALSE(w.awaiting);
  CHECK_FALSE(w.answered_by(7));
  CHECK(w.id == -1);
}

TEST_CASE("stage_inbox: early messages wait in arrival order and stale or fenced or current are not kept") {
  stage_inbox in;
  training::arrival_context here{1, 2, 0, 5, true};  // stage 2, its previous neighbour of generation 2
  forward_data early_a = forward_of(0, 6, 10), early_b = forward_of(0, 7, 11);
  forward_data stale = forward_of(0, 4, 12), now = forward_of(0, 5, 13);
  stale.s.generation = now.s.generation = early_a.s.generation = early_b.s.generation = 2;
  forward_data fenced = forward_of(0, 5, 14);
  fenced.s.generation = 1;  // a neighbour declared lost
  backward_data early_back;
  early_back.s.sender = 2, early_back.s.phase = 6, early_back.s.micro_batch = 3;
  CHECK(in.sort(early_a, here) == arrival::early);
  CHECK(in.sort(stale, here) == arrival::stale);
  CHECK(in.sort(early_back, here) == arrival::early);
  CHECK(in.sort(now, here) == arrival::current);
  CHECK(in.sort(fenced, here) == arrival::fenced);
  CHECK(in.sort(early_b, here) == arrival::early);
  CHECK_FALSE(in.empty());
  stage_inbox::early e = in.take();
  CHECK(in.empty());
  REQUIRE(e.forwards.size() == 2);
  CHECK(e.forwards[0].s.micro_batch == 10);
  CHECK(e.forwards[1].s.micro_batch == 11);
  REQUIRE(e.backwards.size() == 1);
  CHECK(e.backwards[0].s.micro_batch == 3);
  CHECK(e.derivatives.empty());
  CHECK(now.s.micro_batch == 13);  // what is not kept stays with the handler
}

TEST_CASE("stage_outbox: faults are counted per phase and epoch reports wait while a part is pending") {
  recording_self self;
  stage_outbox out;
  out.fault(&self, 0, fault_kind::drop, 0);
  out.fault(&self, 0, fault_kind::delay, 0);
  CHECK(out.faults_sent() == 2);
  out.epoch_report(&self, stage_epoch_report{0, 0, {}});
  CHECK(self.sent == std::vector<std::string>{"fault", "fault", "epoch 0"});
  CHECK(out.hold().empty());
  out.epoch_report(&self, stage_epoch_report{1, 0, {}});
  out.epoch_report(&self, stage_epoch_report{2, 0, {}});
  CHECK(self.sent.size() == 3);                               // held
  const std::vector<stage_epoch_report> before = out.hold();  // a second part: the held go behind the first
  REQUIRE(before.size() == 2);
  CHECK(before[0].epoch == 1);
  out.epoch_report(&self, stage_epoch_report{3, 0, {}});
  REQUIRE(out.take_held().size() == 1);
  out.stop_holding();
  out.epoch_report(&self, stage_epoch_report{4, 0, {}});
  CHECK(self.sent.back() == "epoch 4");
  out.begin_phase();
  CHECK(out.faults_sent() == 0);
}

// The loss side's part of a consistent cut (the actor runtimes): its ledger as it stood and the
// labels it held, as JSON and back, and when it is whole.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "training/loss_ledger.hpp"

namespace petra::training {

/// The ledger at the cut (its totals, open epochs and waves, evaluation batches scored: async's
/// credits that went back), and what the loss side held besides.
struct loss_cut : loss_ledger {
  struct labels_entry {
    int32_t eval_epoch = -1;  // -1: a training micro-batch's
    int64_t id = -1;          // the micro-batch, or the place in the wave
    std::vector<int32_t> labels;
  };
  std::vector<labels_entry> labels;
  int64_t waiting = 0;  // logits whose labels had not come: the cut is not usable
};

template <class Fields>
void describe(Fields& f, loss_cut::labels_entry& l) {
  f("eval_epoch", l.eval_epoch);
  f("id", l.id);
  f("labels", l.labels);
}

template <class Fields>
void describe(Fields& f, loss_cut& part) {
  describe(f, static_cast<loss_ledger&>(part));
  f("labels", part.labels);
  f("waiting", part.waiting);
}

std::string encode(const loss_cut& part);

/// When the loss side's part of a cut is whole: after two markers. The last stage's says that every
/// logits message it sent before the cut is in: the part is taken then (the ledger, the labels
/// held). The loader's says that the labels of every batch that entered before the cut are in. In
/// lockstep the last stage reaches the cut's tick once stage 1 has run J − 1 ticks fewer, so the
/// loader may not yet have sent the labels of the batches that enter in those ticks: they are in
/// flight across the cut (in the stages' parts) and come after the stage's marker. Until the
/// loader's marker they are added to the part taken. (In async the loader's marker goes out with
/// its marker to stage 1, behind every batch before it: it comes first.)
class loss_cut_assembly {
 public:
  /// The last stage's marker of the cut before `tick`, with the part as the loss side stands: the
  /// part, when the loader's marker came before; else nothing (it waits for it).
  std::optional<loss_cut> stage_marker(int64_t tick, loss_cut part);
  /// The loader's marker of that cut: the part waiting for it, if any.
  std::optional<loss_cut> loader_marker(int64_t tick);
  /// Labels that came (the loader's): added to every part waiting for the loader's marker, unless
  /// it holds that batch's already.
  void labels_came(int32_t eval_epoch, int64_t id, const std::vector<int32_t>& labels);
  /// Cuts up to `tick` given up (a stage-local recovery): their parts and markers forgotten.
  void abandon_upto(int64_t tick);
  /// A phase's end: nothing waits.
  void clear();
  /// Parts waiting for the loader's marker.
  std::size_t waiting_parts() const { return held_.size(); }

 private:
  std::map<int64_t, loss_cut> held_;  // by tick: taken at the stage's marker
  std::set<int64_t> loader_done_;     // ticks whose loader marker came first
};
/// Throws std::runtime_error saying what is missing.
loss_cut decode_loss_cut(const std::string& json);

}  // namespace petra::training

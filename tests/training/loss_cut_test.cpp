// The loss side's part of a cut is whole after the last stage's marker and the loader's, in either
// order; labels that come between them are those of batches in flight across the cut.
#include "training/loss_cut.hpp"

#include <doctest/doctest.h>

using namespace petra::training;

namespace {

loss_cut part_holding(std::vector<loss_cut::labels_entry> labels) {
  loss_cut part;
  part.labels = std::move(labels);
  return part;
}

}  // namespace

TEST_CASE("the loader's marker first: the part taken at the last stage's marker is whole at once") {
  loss_cut_assembly cuts;
  CHECK_FALSE(cuts.loader_marker(224));
  cuts.labels_came(1, 6, {3});  // after the loader's marker: a batch of the ticks after the cut
  const auto whole = cuts.stage_marker(224, part_holding({{1, 4, {2}}}));
  REQUIRE(whole);
  REQUIRE(whole->labels.size() == 1);
  CHECK(whole->labels[0].id == 4);
  CHECK(cuts.waiting_parts() == 0);
}

TEST_CASE("the last stage's marker first: labels before the loader's marker join the part") {
  // Lockstep, J = 4: the last stage reaches tick 224 once stage 1 has run tick 221; the labels of
  // the batches entering at ticks 222 and 223 may come after its marker.
  loss_cut_assembly cuts;
  CHECK_FALSE(cuts.stage_marker(224, part_holding({{1, 3, {7}}, {1, 4, {2}}})));
  CHECK(cuts.waiting_parts() == 1);
  cuts.labels_came(1, 5, {9, 9});  // entered at tick 223
  cuts.labels_came(1, 4, {2});     // one the part holds already: not twice
  cuts.labels_came(-1, 40, {1});   // a training micro-batch's
  const auto whole = cuts.loader_marker(224);
  REQUIRE(whole);
  REQUIRE(whole->labels.size() == 4);
  CHECK(whole->labels[2].eval_epoch == 1);
  CHECK(whole->labels[2].id == 5);
  CHECK(whole->labels[2].labels == std::vector<int32_t>{9, 9});
  CHECK(whole->labels[3].eval_epoch == -1);
  CHECK(whole->labels[3].id == 40);
  // After the loader's marker, labels are for ticks after the cut: the part is gone anyway.
  cuts.labels_came(1, 6, {1});
  CHECK(cuts.waiting_parts() == 0);
}

TEST_CASE("cuts given up or a phase's end: nothing waits, a later marker of the same tick starts anew") {
  loss_cut_assembly cuts;
  CHECK_FALSE(cuts.stage_marker(70, part_holding({})));
  CHECK_FALSE(cuts.stage_marker(140, part_holding({})));
  CHECK_FALSE(cuts.loader_marker(210));
  cuts.abandon_upto(140);
  CHECK(cuts.waiting_parts() == 0);
  CHECK_FALSE(cuts.loader_marker(140));             // its part was given up: nothing to complete
  CHECK(cuts.stage_marker(210, part_holding({})));  // the loader's marker of 210 was kept
  cuts.clear();
  CHECK_FALSE(cuts.stage_marker(140, part_holding({})));  // the marker of 140 before clear() is gone
}

// A stage's part of a consistent cut.
#include "training/cut.hpp"

#include <stdexcept>

namespace petra {

pipeline_cut counts_only(const pipeline_cut& cut) {
  pipeline_cut out;
  out.tick = cut.tick;
  out.totals = cut.totals;
  out.in_flight = cut.in_flight;
  out.completed = cut.completed;
  out.driver = cut.driver;
  return out;
}

stage_cut cut_stage(stage& s, backend& be) {
  stage_cut out;
  out.inflight = s.export_inflight();  // first: it refuses a live tape before anything is copied
  out.state = snapshot_stage(s, be);
  return out;
}

void restore_stage_cut(stage& s, backend& be, const stage_cut& from) {
  restore_stage(s, be, from.state);
  s.import_inflight(from.inflight);
}

void count_async_cut(pipeline_cut& cut, int64_t eval_scored) {
  if (cut.stages.empty() || !cut.stages.front().async.present)
    throw std::runtime_error("stage 1's part of the cut is not an async part");
  const async_cut& first = cut.stages.front().async;
  // Stage 1 had every message the loader sent before the marker: run, or queued.
  const auto sent = first.forwards_done + first.evals_done + static_cast<int64_t>(first.forwards.size());
  cut.completed = first.backwards_done;
  cut.in_flight = sent - first.backwards_done - eval_scored;
}

}  // namespace petra

// A stage's part of a consistent cut.
#include "compute/pipeline/cut.hpp"

namespace petra {

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

}  // namespace petra

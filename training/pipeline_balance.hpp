// How close an epoch came to the rate its stages' compute allows: a pipeline of J stages is at best
// as fast as its busiest stage, so the ideal rate is the epoch's images over that stage's busy
// seconds, and the measured rate's share of it is the pipeline's efficiency.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "training/stage_metrics.hpp"

namespace petra {

struct pipeline_balance {
  int busiest_stage = 0;            // 1-based, by busy seconds
  double busiest_fraction = 0;      // its busy share of the epoch's wall time
  double ideal_images_per_s = 0;    // the epoch's images / the busiest stage's busy seconds
  double efficiency = 0;            // the measured images/s over the ideal
  double compute_over_busiest = 0;  // Σ busy / max busy: the most J stages can gain over one doing it all
  // Where this process's CPU stages compute more thread-seconds than its cores give in the busiest
  // stage's time (more stage threads than cores: they take turns): the rate the cores allow, the
  // epoch's images over Σ busy × threads / cores, and the measured rate's share of it. 0 otherwise.
  int cpu_stages = 0, cores = 0;
  double cores_ideal_images_per_s = 0;
  double cores_efficiency = 0;
};

/// The CPU cores this process's stages compute on: `threads[j]` compute threads of stage j + 1
/// (0 for a stage that does not compute on them: another device, another process), `cores` cores.
struct stage_cores_use {
  std::vector<int> threads;
  int cores = 0;
};

/// The balance of an epoch that trained `images` at `images_per_s` with these stage records; none
/// where the stages measured no busy time (simulate) or nothing was trained. With `use`, also the
/// rate its cores allow where that is below the busiest stage's.
std::optional<pipeline_balance> balance_of(const std::vector<stage_record>& stages, double images,
                                           double images_per_s, const stage_cores_use& use = {});

/// The terminal's line for it, e.g. "pipeline: busiest stage 3 (busy 92 %): ideal 3120 img/s, efficiency
/// 85 %; the stages' compute is 5.1 × the busiest's", and where the cores bound it "; 8 CPU stages on
/// 2 cores: their compute allows 651 img/s, efficiency 99 %".
std::string balance_text(const pipeline_balance& b);

}  // namespace petra

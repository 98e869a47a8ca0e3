// A cut's parts gathered into one.
#include "training/cut_assembly.hpp"

#include <stdexcept>

#include "training/loss_cut.hpp"
#include "training/snapshot.hpp"
#include "training/tick_schedule.hpp"

namespace petra {

pipeline_cut assemble_cut(const config::run_config& c, int64_t spacing, int64_t tick,
                          const std::vector<cut_piece>& parts, const nlohmann::json& open) {
  const std::size_t stages = parts.size() - 1;
  pipeline_cut cut;
  cut.tick = tick;
  for (std::size_t j = 0; j < stages; ++j)
    cut.stages.push_back(decode_stage_cut(parts[j].tensors, parts[j].meta, j,
                                          "stage " + std::to_string(j + 1) + "'s part of a cut"));
  const training::loss_cut loss = training::decode_loss_cut(parts[stages].meta);
  if (loss.waiting > 0)
    throw std::runtime_error("the cut before tick " + std::to_string(tick) +
                             " found logits at the loss actor whose labels had not come");
  cut.totals = loss.totals;
  // Lockstep: back at stage 1 before tick `tick`, the micro-batches that entered more than 2(J−1)
  // ticks before (their round trip ends in the tick before). Async: as stage 1's part says.
  const int64_t round_trip = round_trip_ticks(0, stages);
  if (c.runtime.mode == config::runtime_mode::async)
    count_async_cut(cut, loss.eval_scored);
  else
    cut.completed = tick >= round_trip + 1 ? (tick - 1 - round_trip) / spacing + 1 : 0;
  for (const auto& l : loss.labels)
    if (l.eval_epoch < 0) cut.labels[l.id] = l.labels;
  cut.driver =
      nlohmann::json{
          {"epochs", open.at("open")}, {"epochs_done", open.at("done")}, {"loss", parts[stages].meta}}
          .dump();
  return cut;
}

}  // namespace petra

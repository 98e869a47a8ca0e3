// A cut's parts gathered into one, and handed back out for a resume.
#include "actors/coordinator_cuts.hpp"

#include <stdexcept>
#include <string>

#include "training/loss_cut.hpp"
#include "training/snapshot.hpp"
#include "training/tick_schedule.hpp"

namespace petra {

using namespace messages;
using namespace atoms;

pipeline_cut assemble_cut(const config::run_config& c, std::size_t stages, int64_t spacing, int64_t tick,
                          std::vector<cut_part>& parts, const nlohmann::json& open) {
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

void resume_from(control_channel& control, actor_pipeline& pipeline, const pipeline_cut& cut,
                 epoch_collector& epochs, int64_t at, int64_t per_epoch) {
  nlohmann::json driver;
  try {
    driver = nlohmann::json::parse(cut.driver);
    epochs.load(driver.at("epochs"));
    epochs.load_done(driver.contains("epochs_done") ? &driver.at("epochs_done") : nullptr,
                     static_cast<int>(at / per_epoch));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("the snapshot's record of the actor runtime is damaged: ") +
                             e.what());
  }
  const std::size_t stages = pipeline.stages().size();
  if (cut.stages.size() != stages)
    throw std::runtime_error("the snapshot holds " + std::to_string(cut.stages.size()) +
                             " stages, the pipeline " + std::to_string(stages));
  for (std::size_t j = 0; j < stages; ++j) {
    encoded_stage_cut e = encode_stage_cut(cut.stages[j]);
    control.ask<restore_atom>(
        pipeline.stages()[j], control_timeout, restore_atom_v,
        cut_part{static_cast<int32_t>(j), cut.tick, 0, std::move(e.tensors), std::move(e.meta)});
  }
  control.ask<restore_atom>(pipeline.loss(), control_timeout, restore_atom_v,
                            cut_part{-1, cut.tick, 0, {}, driver.at("loss").get<std::string>()});
}

}  // namespace petra

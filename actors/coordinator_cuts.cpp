// A cut's parts handed to its assembly, and the cut handed back out to its owners for a resume.
#include "actors/coordinator_cuts.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "training/cut_assembly.hpp"
#include "training/snapshot.hpp"

namespace petra {

using namespace messages;
using namespace atoms;

pipeline_cut cut_from_parts(const config::run_config& c, std::size_t stages, int64_t spacing, int64_t tick,
                            std::vector<cut_part>& parts, const nlohmann::json& open) {
  std::vector<cut_piece> pieces;
  for (std::size_t j = 0; j <= stages; ++j) pieces.push_back({std::move(parts[j].tensors), parts[j].meta});
  return assemble_cut(c, spacing, tick, pieces, open);
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

// Checkpoints as safetensors.
#include "app/checkpoint.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "compute/pipeline/stage_state.hpp"
#include "compute/serialize/safetensors.hpp"

namespace petra::app {

void save_checkpoint(const std::string& path, std::vector<std::unique_ptr<stage>>& stages, backend& be,
                     std::map<std::string, std::string> metadata) {
  named_tensors tensors;
  nlohmann::json steps = nlohmann::json::array();
  for (auto& s : stages) {
    for (auto& named : export_stage_state(*s, be)) tensors.push_back(std::move(named));
    steps.push_back(s->optimizer().steps_taken());
  }
  metadata["format"] = "petra-checkpoint-1";
  metadata["stage_steps"] = steps.dump();
  save_safetensors(path, tensors, metadata);
}

std::map<std::string, std::string> load_checkpoint(const std::string& path,
                                                   std::vector<std::unique_ptr<stage>>& stages, backend& be) {
  const safetensors_file file = load_safetensors(path);
  auto meta = file.metadata;
  if (meta["format"] != "petra-checkpoint-1")
    throw std::runtime_error("'" + path + "' is not a petra checkpoint (metadata format is '" + meta["format"] +
                             "', expected 'petra-checkpoint-1')");
  nlohmann::json steps;
  try {
    steps = nlohmann::json::parse(meta.at("stage_steps"));
  } catch (const std::exception&) {
    throw std::runtime_error("checkpoint '" + path + "': metadata stage_steps is missing or not a JSON list");
  }
  if (!steps.is_array() || steps.size() != stages.size())
    throw std::runtime_error("checkpoint '" + path + "' holds " + std::to_string(steps.size()) +
                             " stages but the pipeline has " + std::to_string(stages.size()));
  for (std::size_t j = 0; j < stages.size(); ++j) {
    try {
      import_stage_state(*stages[j], be, [&](const std::string& name) -> const tensor& { return file.find(name); });
    } catch (const safetensors_error&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error("checkpoint '" + path + "': " + e.what());
    }
    stages[j]->optimizer().set_steps_taken(steps[j].get<int64_t>());
  }
  return meta;
}

}  // namespace petra::app

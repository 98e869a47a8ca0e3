// Checkpoints as safetensors.
#include "app/checkpoint.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "compute/serialize/safetensors.hpp"

namespace petra::app {

void save_checkpoint(const std::string& path, std::vector<std::unique_ptr<stage>>& stages, backend& be,
                     std::map<std::string, std::string> metadata) {
  named_tensors tensors;
  nlohmann::json steps = nlohmann::json::array();
  for (auto& s : stages) {
    for (parameter* p : s->parameters()) {
      tensors.emplace_back("param/" + p->name, be.to_host(p->value));
      tensors.emplace_back("momentum/" + p->name, be.to_host(p->momentum));
    }
    for (const buffer_ref& b : s->buffers()) tensors.emplace_back("buffer/" + b.name, be.to_host(*b.value));
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
  auto restore = [&](const std::string& name, tensor& dst) {
    const tensor& src = file.find(name);
    if (src.shape() != dst.shape())
      throw std::runtime_error("checkpoint '" + path + "': tensor '" + name + "' has shape " + src.shape_str() +
                               " but the model expects " + dst.shape_str() + ": was it written for another model?");
    be.copy(be.from_host(src), dst);
  };
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
    for (parameter* p : stages[j]->parameters()) {
      restore("param/" + p->name, p->value);
      restore("momentum/" + p->name, p->momentum);
    }
    for (const buffer_ref& b : stages[j]->buffers()) restore("buffer/" + b.name, *b.value);
    stages[j]->optimizer().set_steps_taken(steps[j].get<int64_t>());
  }
  return meta;
}

}  // namespace petra::app

// Checkpoints as safetensors: tensors of stage 1, then stage 2, ...; metadata says where each ends.
#include "training/checkpoint.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "compute/serialize/safetensors.hpp"

namespace petra {
namespace {

constexpr const char* format_name = "petra-checkpoint-1";

std::vector<int64_t> int_list(const std::map<std::string, std::string>& meta, const std::string& key,
                              const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(meta.at(key));
    return j.get<std::vector<int64_t>>();
  } catch (const std::exception&) {
    throw std::runtime_error("checkpoint '" + path + "': metadata " + key +
                             " is missing or not a list of integers");
  }
}

}  // namespace

void write_checkpoint(const std::string& path, const std::vector<stage_snapshot>& stages,
                      std::map<std::string, std::string> metadata) {
  named_tensors tensors;
  nlohmann::json steps = nlohmann::json::array(), counts = nlohmann::json::array();
  for (const stage_snapshot& s : stages) {
    for (const named_tensor& t : s.tensors) tensors.emplace_back(t.name, t.value);
    steps.push_back(s.optimizer_steps);
    counts.push_back(s.tensors.size());
  }
  metadata["format"] = format_name;
  metadata["stage_steps"] = steps.dump();
  metadata["stage_tensors"] = counts.dump();
  save_safetensors(path, tensors, metadata);
}

checkpoint read_checkpoint(const std::string& path, std::size_t stage_count) {
  safetensors_file file = load_safetensors(path);
  checkpoint out;
  out.path = path;
  out.metadata = file.metadata;
  const auto format = out.metadata.find("format");
  if (format == out.metadata.end() || format->second != format_name)
    throw std::runtime_error("'" + path + "' is not a petra checkpoint (metadata format is '" +
                             (format == out.metadata.end() ? std::string() : format->second) +
                             "', expected '" + format_name + "')");
  const std::vector<int64_t> steps = int_list(out.metadata, "stage_steps", path);
  if (steps.size() != stage_count)
    throw std::runtime_error("checkpoint '" + path + "' holds " + std::to_string(steps.size()) +
                             " stages but the pipeline has " + std::to_string(stage_count));
  // Files written before stage_tensors existed: every stage looks its tensors up among all.
  std::vector<int64_t> counts(stage_count, 0);
  const bool split = out.metadata.count("stage_tensors") > 0;
  if (split) {
    counts = int_list(out.metadata, "stage_tensors", path);
    int64_t total = 0;
    for (int64_t n : counts) total += n;
    if (counts.size() != stage_count || total != static_cast<int64_t>(file.tensors.size()))
      throw std::runtime_error("checkpoint '" + path + "': metadata stage_tensors does not match its " +
                               std::to_string(file.tensors.size()) + " tensors");
  }
  std::size_t next = 0;
  for (std::size_t j = 0; j < stage_count; ++j) {
    stage_snapshot s;
    s.stage = static_cast<int32_t>(j);
    s.optimizer_steps = steps[j];
    const std::size_t begin = split ? next : 0;
    const std::size_t end = split ? next + static_cast<std::size_t>(counts[j]) : file.tensors.size();
    for (std::size_t i = begin; i < end; ++i)
      s.tensors.push_back({file.tensors[i].first, file.tensors[i].second});
    next = end;
    out.stages.push_back(std::move(s));
  }
  return out;
}

}  // namespace petra

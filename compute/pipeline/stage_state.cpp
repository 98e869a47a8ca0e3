// Stage state export and restore.
#include "compute/pipeline/stage_state.hpp"

#include <map>
#include <stdexcept>

namespace petra {

void save_optimizer_state(const std::vector<parameter*>& params, backend& be, const std::string& prefix,
                          std::vector<named_tensor>& into) {
  for (parameter* p : params) {
    into.push_back({prefix + "momentum/" + p->name, be.to_host(p->momentum)});
    if (p->second_moment.defined())
      into.push_back({prefix + "second_moment/" + p->name, be.to_host(p->second_moment)});
  }
}

void restore_optimizer_state(const std::vector<parameter*>& params, const std::string& prefix,
                             const std::map<std::string, const tensor*>& names,
                             const std::function<void(const std::string&, tensor&)>& restore) {
  for (parameter* p : params) {
    const std::string second = prefix + "second_moment/" + p->name;
    const bool saved = names.count(second) != 0, adamw = p->second_moment.defined();
    if (saved != adamw)
      throw std::runtime_error("tensor '" + second + "' is " + (saved ? "in the checkpoint" : "missing") +
                               ": the checkpoint was written with training.optimizer.kind " +
                               (saved ? "adamw" : "sgd") + " and this run trains with " +
                               (adamw ? "adamw" : "sgd") + "; the optimizer's state does not carry over");
    restore(prefix + "momentum/" + p->name, p->momentum);
    if (adamw) restore(second, p->second_moment);
  }
}

stage_snapshot snapshot_stage(stage& s, backend& be) {
  stage_snapshot out;
  out.stage = static_cast<int32_t>(s.index());
  out.optimizer_steps = s.optimizer().steps_taken();
  for (parameter* p : s.parameters()) out.tensors.push_back({"param/" + p->name, be.to_host(p->value)});
  save_optimizer_state(s.parameters(), be, "", out.tensors);
  for (const buffer_ref& b : s.buffers()) out.tensors.push_back({"buffer/" + b.name, be.to_host(*b.value)});
  return out;
}

void restore_stage(stage& s, backend& be, const stage_snapshot& from) {
  std::map<std::string, const tensor*> by_name;
  for (const named_tensor& t : from.tensors) by_name[t.name] = &t.value;
  auto restore = [&](const std::string& name, tensor& dst) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw std::runtime_error("tensor '" + name + "' of stage " + std::to_string(s.index() + 1) +
                               " is missing: was the checkpoint written for another model?");
    const tensor& src = *it->second;
    if (src.shape() != dst.shape())
      throw std::runtime_error("tensor '" + name + "' has shape " + src.shape_str() +
                               " but the model expects " + dst.shape_str() +
                               ": was the checkpoint written for another model?");
    be.copy(be.from_host(src), dst);
  };
  for (parameter* p : s.parameters()) restore("param/" + p->name, p->value);
  restore_optimizer_state(s.parameters(), "", by_name, restore);
  for (const buffer_ref& b : s.buffers()) restore("buffer/" + b.name, *b.value);
  s.optimizer().set_steps_taken(from.optimizer_steps);
}

}  // namespace petra

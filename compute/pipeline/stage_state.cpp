// Stage state export and restore.
#include "compute/pipeline/stage_state.hpp"

#include <stdexcept>

namespace petra {

std::vector<std::pair<std::string, tensor>> export_stage_state(stage& s, backend& be) {
  std::vector<std::pair<std::string, tensor>> out;
  for (parameter* p : s.parameters()) {
    out.emplace_back("param/" + p->name, be.to_host(p->value));
    out.emplace_back("momentum/" + p->name, be.to_host(p->momentum));
  }
  for (const buffer_ref& b : s.buffers()) out.emplace_back("buffer/" + b.name, be.to_host(*b.value));
  return out;
}

void import_stage_state(stage& s, backend& be, const std::function<const tensor&(const std::string&)>& lookup) {
  auto restore = [&](const std::string& name, tensor& dst) {
    const tensor& src = lookup(name);
    if (src.shape() != dst.shape())
      throw std::runtime_error("tensor '" + name + "' has shape " + src.shape_str() + " but the model expects " +
                               dst.shape_str() + ": was the checkpoint written for another model?");
    be.copy(be.from_host(src), dst);
  };
  for (parameter* p : s.parameters()) {
    restore("param/" + p->name, p->value);
    restore("momentum/" + p->name, p->momentum);
  }
  for (const buffer_ref& b : s.buffers()) restore("buffer/" + b.name, *b.value);
}

}  // namespace petra

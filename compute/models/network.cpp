// Either family behind one spec.
#include "compute/models/network.hpp"

namespace petra {

std::size_t network_spec::block_count() const {
  if (kind == family::revvit) return static_cast<std::size_t>(revvit.depth) + 2;
  std::size_t blocks = 2;  // stem and head
  for (int n : revnet.blocks) blocks += static_cast<std::size_t>(n);
  return blocks;
}

void network_spec::validate() const {
  if (kind == family::revnet)
    revnet.validate();
  else
    revvit.validate();
}

std::vector<std::unique_ptr<block>> build_network(const network_spec& spec,
                                                  const std::function<backend&(std::size_t)>& backend_of,
                                                  uint64_t seed) {
  return spec.kind == network_spec::family::revnet ? build_revnet(spec.revnet, backend_of, seed)
                                                   : build_revvit(spec.revvit, backend_of, seed);
}

std::vector<std::unique_ptr<block>> build_network(const network_spec& spec, backend& be, uint64_t seed) {
  return build_network(
      spec, [&](std::size_t) -> backend& { return be; }, seed);
}

activation_shape input_shape(const network_spec& spec, int64_t batch) {
  return {{batch, spec.in_channels(), spec.height(), spec.width()}, {}};
}

}  // namespace petra

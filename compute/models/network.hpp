// The network a run trains, of either family: a RevNet (compute/models/revnet) or a RevViT
// (compute/models/revvit), with what a run asks of it whichever it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compute/models/revnet.hpp"
#include "compute/models/revvit.hpp"

namespace petra {

struct network_spec {
  enum class family { revnet, revvit };
  family kind = family::revnet;
  revnet_spec revnet;  // when kind is revnet
  revvit_spec revvit;  // when kind is revvit

  network_spec() = default;
  explicit network_spec(revnet_spec spec) : kind(family::revnet), revnet(std::move(spec)) {}
  explicit network_spec(revvit_spec spec) : kind(family::revvit), revvit(std::move(spec)) {}

  const std::string& name() const { return kind == family::revnet ? revnet.name : revvit.name; }
  int in_channels() const { return kind == family::revnet ? revnet.in_channels : revvit.in_channels; }
  int height() const { return kind == family::revnet ? revnet.height : revvit.height; }
  int width() const { return kind == family::revnet ? revnet.width : revvit.width; }
  int num_classes() const { return kind == family::revnet ? revnet.num_classes : revvit.num_classes; }
  /// Blocks in the list build_network makes: stem, the body, head.
  std::size_t block_count() const;
  /// Throws std::invalid_argument naming the field when the spec cannot build a network.
  void validate() const;
};

/// The blocks in order, block i on `backend_of(i)`; initial values depend only on (seed, name).
std::vector<std::unique_ptr<block>> build_network(const network_spec& spec,
                                                  const std::function<backend&(std::size_t)>& backend_of,
                                                  uint64_t seed);
std::vector<std::unique_ptr<block>> build_network(const network_spec& spec, backend& be, uint64_t seed);

/// The input shape of one micro-batch of `batch` images.
activation_shape input_shape(const network_spec& spec, int64_t batch);

}  // namespace petra

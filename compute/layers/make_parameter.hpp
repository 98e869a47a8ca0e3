// Building a parameter on a backend from its host initial value.
#pragma once

#include <string>

#include "compute/backend.hpp"
#include "compute/parameter.hpp"

namespace petra {

/// A parameter on `be`'s device holding `initial`, with zeroed gradient and momentum.
inline parameter make_parameter(backend& be, const std::string& name, const tensor& initial, bool decay) {
  parameter p;
  p.name = name;
  p.value = be.from_host(initial);
  p.grad = be.zeros(initial.shape());
  p.momentum = be.zeros(initial.shape());
  p.decay = decay;
  return p;
}

}  // namespace petra

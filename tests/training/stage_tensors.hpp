// Every tensor of a pipeline's stages by name, and how many differ between two such sets: the
// union over the stages does not depend on the cut, so it compares a model across block moves.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <string>

#include "training/runtime.hpp"

namespace petra::testing {

inline std::map<std::string, tensor> tensors_by_name(pipeline_runtime& r) {
  std::map<std::string, tensor> out;
  for (const stage_snapshot& s : r.snapshot())
    for (const named_tensor& t : s.tensors) out.emplace(t.name, t.value);
  return out;
}

/// The names whose tensors differ in shape or in any byte (or are missing from `b`).
inline int differing_tensors(const std::map<std::string, tensor>& a, const std::map<std::string, tensor>& b) {
  REQUIRE(a.size() == b.size());
  int n = 0;
  for (const auto& [name, x] : a) {
    const auto it = b.find(name);
    if (it == b.end() || it->second.shape() != x.shape() ||
        std::memcmp(it->second.data(), x.data(), x.bytes()))
      ++n;
  }
  return n;
}

}  // namespace petra::testing

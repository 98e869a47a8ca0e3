// A RevNet stage of coupling blocks run through two backwards, the plain order or the overlapped
// one, with everything that must come out the same read back to the host.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compute/blocks/coupling.hpp"
#include "compute/pipeline/stage.hpp"
#include "tests/compute/gradcheck.hpp"

namespace petra::testing {

/// What a stage's backward gave, on the host.
struct backward_bits {
  activation input, input_grad;  // of the first backward
  std::vector<tensor> grads;     // every parameter gradient after the first backward
  std::vector<tensor> weights;   // every weight after the second backward and its optimizer step
};

inline activation host_copy(backend& be, const activation& a) {
  return {be.to_host(a.x1), a.x2.defined() ? be.to_host(a.x2) : tensor{}};
}

/// `blocks` basic couplings of `width` channels on `be`; with `rebuild`, the backward overlaps its
/// rebuilds on it. Two forwards and two backwards of seeded data (k = 2: one optimizer step).
inline backward_bits run_coupling_stage(backend& be, std::unique_ptr<backend> rebuild, int blocks, int width,
                                        int batch, int side) {
  std::vector<std::unique_ptr<block>> chain;
  for (int b = 0; b < blocks; ++b)
    chain.push_back(std::make_unique<coupling_block>(be, "c" + std::to_string(b), conv_chain::basic(width),
                                                     100 + static_cast<uint64_t>(b)));
  optimizer_settings opt;
  opt.accumulation = 2;
  opt.total_steps = 10;
  stage s(1, std::move(chain), be, opt, stage_options{});
  REQUIRE(s.can_overlap_rebuild());
  if (rebuild) s.overlap_rebuild(std::move(rebuild));
  std::mt19937 rng(7);
  const activation_shape shape{{batch, width, side, side}, {batch, width, side, side}};
  backward_bits out;
  for (int64_t id = 0; id < 2; ++id) {
    const activation x = random_activation(shape, rng), dy = random_activation(shape, rng);
    const activation y = s.forward({be.import(x.x1), be.import(x.x2)}, id, id);
    const stage::backward_result r = s.backward(y, {be.import(dy.x1), be.import(dy.x2)}, id, id + 1);
    if (id == 0) {
      out.input = host_copy(be, r.input);
      out.input_grad = host_copy(be, r.input_grad);
      for (parameter* p : s.parameters()) out.grads.push_back(be.to_host(p->grad));
    }
  }
  for (parameter* p : s.parameters()) out.weights.push_back(be.to_host(p->value));
  return out;
}

inline bool same_bits(const tensor& a, const tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || (a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

/// Every tensor of the two runs bit for bit.
inline void check_same_bits(const backward_bits& plain, const backward_bits& overlapped) {
  CHECK(same_bits(plain.input.x1, overlapped.input.x1));
  CHECK(same_bits(plain.input.x2, overlapped.input.x2));
  CHECK(same_bits(plain.input_grad.x1, overlapped.input_grad.x1));
  CHECK(same_bits(plain.input_grad.x2, overlapped.input_grad.x2));
  REQUIRE(plain.grads.size() == overlapped.grads.size());
  for (std::size_t i = 0; i < plain.grads.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(plain.grads[i], overlapped.grads[i]));
    CHECK(same_bits(plain.weights[i], overlapped.weights[i]));
  }
}

}  // namespace petra::testing

// A reversible stage (RevNet couplings, or any chain of reversible blocks) run through two backwards, the
// plain order or the overlapped one, and as a stage in a pipeline whose last rebuild may start ahead, with
// everything that must come out the same read back to the host.
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

/// A stage of `chain` on `be`; with `rebuild`, the backward overlaps its rebuilds on it. Two
/// forwards and two backwards of seeded data of `shape` (k = 2: one optimizer step).
inline backward_bits run_reversible_stage(backend& be, std::unique_ptr<backend> rebuild,
                                          std::vector<std::unique_ptr<block>> chain,
                                          const activation_shape& shape) {
  optimizer_settings opt;
  opt.accumulation = 2;
  opt.total_steps = 10;
  stage s(1, std::move(chain), be, opt, stage_options{});
  REQUIRE(s.can_overlap_rebuild());
  if (rebuild) s.overlap_rebuild(std::move(rebuild));
  std::mt19937 rng(7);
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

/// `blocks` basic couplings of `width` channels on `be`, run as run_reversible_stage.
inline backward_bits run_coupling_stage(backend& be, std::unique_ptr<backend> rebuild, int blocks, int width,
                                        int batch, int side) {
  std::vector<std::unique_ptr<block>> chain;
  for (int b = 0; b < blocks; ++b)
    chain.push_back(std::make_unique<coupling_block>(be, "c" + std::to_string(b), conv_chain::basic(width),
                                                     100 + static_cast<uint64_t>(b)));
  return run_reversible_stage(be, std::move(rebuild), std::move(chain),
                              {{batch, width, side, side}, {batch, width, side, side}});
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

/// How a pipelined run starts its backwards' last rebuilds: not ahead, ahead from the output the
/// backward then gets, ahead from a copy of it (other tensors: never taken), or ahead and then the
/// weights handed out (parameters(): may be written, so dropped).
enum class ahead_mode { none, ahead, from_copy, weights_read };

struct pipelined_bits {
  std::vector<activation> inputs, input_grads;  // of every backward, on the host
  std::vector<tensor> weights;                  // after the run
  int64_t taken = 0;                            // stats().rebuilds_ahead
  int64_t ready_calls = 0;                      // input_ready calls that gave the backward's own input
};

/// `blocks` couplings (k = 2) run as a stage in a pipeline: forwards 0 and 1, then for each id the
/// backward's last rebuild started ahead (by `mode`), the next forward while it runs, the backward.
inline pipelined_bits run_pipelined(backend& be, std::unique_ptr<backend> rebuild, ahead_mode mode,
                                    int blocks = 4) {
  std::vector<std::unique_ptr<block>> chain;
  for (int b = 0; b < blocks; ++b)
    chain.push_back(std::make_unique<coupling_block>(be, "c" + std::to_string(b), conv_chain::basic(8),
                                                     200 + static_cast<uint64_t>(b)));
  optimizer_settings opt;
  opt.accumulation = 2;
  opt.total_steps = 10;
  stage s(1, std::move(chain), be, opt, stage_options{});
  if (rebuild) s.overlap_rebuild(std::move(rebuild));
  std::mt19937 rng(11);
  const activation_shape shape{{4, 8, 6, 6}, {4, 8, 6, 6}};
  auto draw = [&] {
    const activation a = random_activation(shape, rng);
    return activation{be.import(a.x1), be.import(a.x2)};
  };
  const int n = 5;
  std::vector<activation> ys(n), dys(n);
  for (int id = 0; id < n; ++id) dys[id] = draw();
  ys[0] = s.forward(draw(), 0, 0);
  ys[1] = s.forward(draw(), 1, 1);
  pipelined_bits out;
  for (int id = 0; id < n; ++id) {
    if (mode != ahead_mode::none) {
      CHECK_FALSE(s.rebuild_ahead(ys[id], id + 1));  // not the backward that comes next
      activation from = ys[id];
      if (mode == ahead_mode::from_copy) {
        from = {be.empty(ys[id].x1.shape()), be.empty(ys[id].x2.shape())};
        be.copy(ys[id].x1, from.x1);
        be.copy(ys[id].x2, from.x2);
      }
      CHECK(s.rebuild_ahead(from, id) == s.overlaps_rebuild());
      CHECK_FALSE(s.rebuild_ahead(from, id));  // one at a time
    }
    if (id + 2 < n) ys[id + 2] = s.forward(draw(), id + 2, id + 2);  // beside the rebuild started ahead
    if (mode == ahead_mode::weights_read) {
      CHECK(s.has_rebuild_ahead() == s.overlaps_rebuild());
      CHECK_FALSE(s.parameters().empty());
      CHECK_FALSE(s.has_rebuild_ahead());
    }
    activation ready;
    const stage::backward_result r =
        s.backward(ys[id], dys[id], id, id + 2, [&](const activation& x) { ready = x; });
    if (ready.defined() && ready.x1.shares_storage_with(r.input.x1) &&
        ready.x2.shares_storage_with(r.input.x2))
      ++out.ready_calls;
    out.inputs.push_back(host_copy(be, r.input));
    out.input_grads.push_back(host_copy(be, r.input_grad));
  }
  for (parameter* p : s.parameters()) out.weights.push_back(be.to_host(p->value));
  out.taken = s.stats().rebuilds_ahead;
  return out;
}

inline void check_same_bits(const pipelined_bits& a, const pipelined_bits& b) {
  REQUIRE(a.inputs.size() == b.inputs.size());
  for (std::size_t i = 0; i < a.inputs.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(a.inputs[i].x1, b.inputs[i].x1));
    CHECK(same_bits(a.inputs[i].x2, b.inputs[i].x2));
    CHECK(same_bits(a.input_grads[i].x1, b.input_grads[i].x1));
    CHECK(same_bits(a.input_grads[i].x2, b.input_grads[i].x2));
  }
  REQUIRE(a.weights.size() == b.weights.size());
  for (std::size_t i = 0; i < a.weights.size(); ++i) CHECK(same_bits(a.weights[i], b.weights[i]));
}

}  // namespace petra::testing

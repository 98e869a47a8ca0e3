// The default preset's network as one backprop stage on the CPU backend, and the logits a backend
// that has never seen its weights computes from the same state: the reference for a backend that
// keeps converted weights between ops.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "compute/cpu/bf16_support.hpp"
#include "compute/models/revnet.hpp"
#include "compute/pipeline/stage_state.hpp"

namespace petra::testing {

/// The precisions whose CPU backend converts weights: fp32 (blocked layouts) and, on a CPU with
/// bf16 instructions, bf16.
inline std::vector<math_precision> converting_precisions() {
  std::vector<math_precision> p{math_precision::fp32};
  if (missing_bf16_instructions(cpu_flags()).empty()) p.push_back(math_precision::bf16);
  return p;
}

/// fashion_small (1×28×28, widths 16/32/64) as one taped stage (backprop, k = 1: an optimizer step
/// after every backward) on its own 2-thread CPU backend.
struct model_stage {
  static constexpr int batch = 8;
  std::unique_ptr<backend> be;
  std::unique_ptr<stage> whole;

  explicit model_stage(math_precision precision) : be(make_cpu_backend(2, precision)) {
    optimizer_settings opt;
    opt.schedule = schedule_kind::constant;
    stage_options taped;
    taped.taped = true;
    whole = std::make_unique<stage>(0, build_revnet(revnet_preset("fashion_small"), *be, 3), *be, opt, taped);
  }

  /// Seeded images of the preset's shape, the same for every call.
  static tensor images() {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    tensor t = tensor::empty({batch, 1, 28, 28});
    float* x = t.data();
    for (int64_t i = 0; i < t.numel(); ++i) x[i] = uniform(rng);
    return t;
  }

  /// The training forward's logits on the host.
  std::vector<float> forward(int64_t id) {
    const activation logits = whole->forward({be->from_host(images()), {}}, id, id);
    last_logits_ = logits.x1;
    return be->to_host(logits.x1).to_vector();
  }

  /// The backward of the last forward under softmax cross-entropy, then the optimizer step.
  void backward(int64_t id) {
    std::vector<int32_t> labels(batch);
    for (int i = 0; i < batch; ++i) labels[static_cast<std::size_t>(i)] = i % 10;
    tensor dlogits;
    be->softmax_cross_entropy(last_logits_, labels, &dlogits, nullptr);
    whole->backward({}, {dlogits, {}}, id, id);
  }

 private:
  tensor last_logits_;
};

/// The logits of a training forward on a fresh backend (nothing converted yet) of a stage
/// restored from `state`.
inline std::vector<float> logits_on_fresh_backend(math_precision precision, const stage_snapshot& state) {
  model_stage fresh(precision);
  restore_stage(*fresh.whole, *fresh.be, state);
  return fresh.forward(0);
}

}  // namespace petra::testing

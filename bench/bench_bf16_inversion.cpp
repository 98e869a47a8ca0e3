// The arithmetic part of RevNet-18's inversion error, per coupling stage, in fp32 and bf16: the
// network is trained briefly (backprop, fp32) so its weights are not at init, then the runs of
// couplings are rebuilt as PETRA's one-block stages rebuild them (from the exact output of the
// non-reversible stage after the run, each rebuilt input feeding the stage before) with the weights
// held fixed, so what remains is rounding. Printed per coupling: ‖x̃ − x‖/‖x‖ on a held-out
// micro-batch in fp32, in bf16 (the coupling's reconstruction x₂ = y₁ − F(y₂) in fp32, as petra
// runs it) and in bf16 with that reconstruction rounded to bf16 (what a bf16 one would give).
// Usage: bench_bf16_inversion DATA_DIR [STEPS=40 [THREADS=2]], DATA_DIR a CIFAR-10 binary folder
// (bench/gpu/make_synthetic_cifar.py makes a synthetic one).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "compute/cpu/bf16_support.hpp"
#include "compute/models/revnet.hpp"
#include "compute/pipeline/stage_state.hpp"
#include "compute/precision.hpp"
#include "datasets/cifar10.hpp"

namespace {

using namespace petra;

constexpr int batch = 32;

/// Micro-batch `index` of `d` (wrapping), normalised with CIFAR-10's channel statistics.
tensor images_of(const data::dataset& d, int64_t index) {
  const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, std_dev[3] = {0.2023f, 0.1994f, 0.2010f};
  tensor t = tensor::empty({batch, 3, 32, 32});
  float* out = t.data();
  const int64_t plane = 32 * 32;
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t image = (index * batch + i) % d.count;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t p = 0; p < plane; ++p) {
        const float v = d.pixels[static_cast<std::size_t>((image * 3 + c) * plane + p)] / 255.f;
        out[(i * 3 + c) * plane + p] = (v - mean[c]) / std_dev[c];
      }
  }
  return t;
}

std::vector<int32_t> labels_of(const data::dataset& d, int64_t index) {
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < batch; ++i)
    labels.push_back(d.labels[static_cast<std::size_t>((index * batch + i) % d.count)]);
  return labels;
}

double relative_error(const activation& rebuilt, const activation& exact) {
  double diff = 0, norm = 0;
  for (auto [a, b] : {std::pair{rebuilt.x1, exact.x1}, std::pair{rebuilt.x2, exact.x2}}) {
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double d = static_cast<double>(a.data()[i]) - b.data()[i];
      diff += d * d;
      norm += static_cast<double>(b.data()[i]) * b.data()[i];
    }
  }
  return std::sqrt(diff / norm);
}

activation on_host(backend& be, const activation& a) {
  return {be.to_host(a.x1), a.x2.defined() ? be.to_host(a.x2) : tensor{}};
}

/// Per coupling (in block order): the rebuild error of its input with the weights of `state`.
std::vector<double> rebuild_errors(math_precision precision, int threads, const stage_snapshot& state,
                                   const tensor& images, bool round_reconstruction) {
  auto be = make_cpu_backend(threads, precision);
  stage whole(0, build_revnet(revnet_preset("revnet18"), *be, 0), *be, optimizer_settings{}, stage_options{});
  restore_stage(whole, *be, state);
  auto& blocks = whole.blocks();
  std::vector<activation> inputs{{be->from_host(images), {}}};
  for (auto& b : blocks) inputs.push_back(b->forward(inputs.back(), pass::recompute, nullptr));
  std::vector<double> errors;
  activation rebuilt;  // what the stage after a coupling sent back: exact after a non-reversible one
  for (std::size_t b = blocks.size(); b-- > 0;) {
    if (!blocks[b]->reversible()) {
      rebuilt = {};
      continue;
    }
    const activation y = rebuilt.defined() ? rebuilt : inputs[b + 1];
    rebuilt = blocks[b]->inverse(y);
    if (round_reconstruction) {
      tensor x2 = be->to_host(rebuilt.x2);
      float* v = x2.data();
      for (int64_t i = 0; i < x2.numel(); ++i) v[i] = round_to_bf16(v[i]);
      rebuilt.x2 = be->from_host(x2);
    }
    errors.insert(errors.begin(), relative_error(on_host(*be, rebuilt), on_host(*be, inputs[b])));
  }
  return errors;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_bf16_inversion DATA_DIR [STEPS [THREADS]] (DATA_DIR: CIFAR-10 binary files; "
                 "bench/gpu/make_synthetic_cifar.py DATA_DIR makes a synthetic set)\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 40;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  data::dataset train;
  try {
    train = data::load_cifar10(dir, true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_bf16_inversion: %s\n", e.what());
    return 2;
  }
  const bool bf16_native = missing_bf16_instructions(cpu_flags()).empty();
  const math_precision bf16 = bf16_native ? math_precision::bf16 : math_precision::bf16_emulated;

  // A short backprop training in fp32 (micro-batch 32, SGD lr 0.05, momentum 0.9).
  auto be = make_cpu_backend(threads, math_precision::fp32);
  optimizer_settings opt;
  opt.schedule = schedule_kind::constant;
  opt.lr = 0.05;
  opt.momentum = 0.9;
  stage_options taped;
  taped.taped = true;
  stage whole(0, build_revnet(revnet_preset("revnet18"), *be, 0), *be, opt, taped);
  float first_loss = 0, last_loss = 0;
  for (int s = 0; s < steps; ++s) {
    const activation logits = whole.forward({be->from_host(images_of(train, s)), {}}, s, s);
    tensor dlogits;
    const float loss = be->softmax_cross_entropy(logits.x1, labels_of(train, s), &dlogits, nullptr);
    (s == 0 ? first_loss : last_loss) = loss;
    whole.backward({}, {dlogits, {}}, s, s);
  }
  const stage_snapshot trained = snapshot_stage(whole, *be);
  const tensor held_out = images_of(train, steps);  // a micro-batch the training did not see

  std::printf(
      "RevNet-18 (3x32x32) after %d backprop steps of micro-batch 32 on %s, read as %s (train loss %.3f -> "
      "%.3f), %d threads\n",
      steps, dir.c_str(), train.name.c_str(), first_loss, last_loss, threads);
  std::printf(
      "rebuild error ||x~ - x|| / ||x|| of each coupling's input, weights fixed, held-out micro-batch\n\n");
  const auto fp32 = rebuild_errors(math_precision::fp32, threads, trained, held_out, false);
  const auto in_bf16 = rebuild_errors(bf16, threads, trained, held_out, false);
  const auto rounded = rebuild_errors(bf16, threads, trained, held_out, true);
  std::printf("| coupling | fp32 | %s (fp32 reconstruction) | %s, reconstruction rounded to bf16 |\n",
              to_string(bf16), to_string(bf16));
  std::printf("|---|---|---|---|\n");
  for (std::size_t i = 0; i < fp32.size(); ++i)
    std::printf("| %zu | %.2e | %.2e | %.2e |\n", i + 1, fp32[i], in_bf16[i], rounded[i]);
  return 0;
}

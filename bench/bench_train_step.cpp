// One training step (forward + loss + backward + SGD update; backprop, J = 1) of
// (a) the default preset at micro-batch 64 and (b) RevNet-18 at micro-batch 32 on 3×32×32:
// petra against the PyTorch peer (bench/peer/revnet_peer.py, same architecture, same batch,
// same thread count), both timed in this run. Prints medians and the ratio ours/peer, and a bf16
// row per model (runtime.precision: bf16, or bf16_emulated on a CPU without bf16 instructions)
// against the peer under torch.autocast(bf16), PyTorch's own bf16 recipe. Usage: bench_train_step [THREADS
// [ITERS [ARCH|all [fp32|bf16]]]]: ARCH times that model only, fp32 leaves the bf16 rows out, bf16 the
// fp32 rows. Each timing runs 3 warm-up steps, then ITERS.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench/revnet_peer_run.hpp"
#include "compute/cpu/bf16_support.hpp"
#include "compute/init.hpp"
#include "compute/models/revnet.hpp"
#include "compute/pipeline/stage.hpp"

namespace {

using namespace petra;

struct timing {
  double median_ms;
  double min_ms;
};

timing time_ours(const std::string& arch, shape_t input, int batch, int threads, int warmup, int iters,
                 math_precision precision) {
  auto be = make_cpu_backend(threads, precision);
  revnet_spec spec = revnet_preset(arch);
  spec.in_channels = static_cast<int>(input[0]), spec.height = static_cast<int>(input[1]);
  spec.width = static_cast<int>(input[2]);
  optimizer_settings opt;
  opt.schedule = schedule_kind::constant;
  stage_options taped;
  taped.taped = true;  // backprop: the forward keeps its tape for the backward
  stage whole(0, build_revnet(spec, *be, 0), *be, opt, taped);
  init_rng rng(1, "bench");
  tensor images = tensor::empty({batch, spec.in_channels, spec.height, spec.width});
  for (int64_t i = 0; i < images.numel(); ++i) images.data()[i] = rng.uniform(-1.f, 1.f);
  std::vector<int32_t> labels(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i) labels[static_cast<std::size_t>(i)] = i % spec.num_classes;
  const activation x{be->from_host(images), {}};
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const activation logits = whole.forward(x, i, i);
    tensor dlogits;
    be->softmax_cross_entropy(logits.x1, labels, &dlogits, nullptr);
    whole.backward({}, {dlogits, {}}, i, i);  // k = 1: the SGD step follows every backward
    const double elapsed =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

/// The peer's step; `bf16` runs its forward and loss under torch.autocast (bf16).
bool time_peer(const std::string& arch, const shape_t& input, int batch, int threads, int warmup, int iters,
               bool bf16, timing& out, std::string& why) {
  nlohmann::json j;
  if (!bench::run_revnet_peer("step --arch " + arch + " --input " + std::to_string(input[0]) + "," +
                                  std::to_string(input[1]) + "," + std::to_string(input[2]) + " --batch " +
                                  std::to_string(batch) + " --threads " + std::to_string(threads) +
                                  " --warmup " + std::to_string(warmup) + " --iters " +
                                  std::to_string(iters) + (bf16 ? " --autocast bf16" : ""),
                              j, why))
    return false;
  out = {j["median_ms"].get<double>(), j["min_ms"].get<double>()};
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 15;
  // Optional: one model only (its arch name), and "fp32" or "bf16" for that precision's rows only.
  const std::string only = argc > 3 ? argv[3] : "";
  const std::string precisions = argc > 4 ? argv[4] : "";
  if (threads < 1 || iters < 1 || (precisions != "" && precisions != "fp32" && precisions != "bf16")) {
    std::fprintf(
        stderr,
        "usage: bench_train_step [THREADS [ITERS [ARCH|all [fp32|bf16]]]] (got THREADS %s, ITERS %s%s%s)\n",
        argc > 1 ? argv[1] : "-", argc > 2 ? argv[2] : "-", precisions.empty() ? "" : ", ",
        precisions.c_str());
    return 2;
  }
  const bool with_fp32 = precisions != "bf16";
  const bool with_bf16 = precisions != "fp32";
  struct bench_case {
    const char* label;
    const char* arch;
    shape_t input;
    int batch;
  };
  const std::vector<bench_case> cases = {
      {"default preset (fashion_small 1x28x28)", "fashion_small", {1, 28, 28}, 64},
      {"RevNet-18 (3x32x32)", "revnet18", {3, 32, 32}, 32}};
  if (!only.empty() && only != "all" &&
      std::none_of(cases.begin(), cases.end(), [&](const bench_case& c) { return only == c.arch; })) {
    std::fprintf(stderr, "bench_train_step: ARCH must be fashion_small, revnet18 or all, got '%s'\n",
                 only.c_str());
    return 2;
  }
  std::printf(
      "one training step (forward + loss + backward + SGD), backprop, J = 1, %d threads, median of %d\n\n",
      threads, iters);
  std::printf("%-40s %6s %12s %12s %12s %12s %8s\n", "model", "batch", "petra ms", "(min)", "torch ms",
              "(min)", "ratio");
  const math_precision bf16 =
      missing_bf16_instructions(cpu_flags()).empty() ? math_precision::bf16 : math_precision::bf16_emulated;
  int failures = 0;
  for (const bench_case& c : cases) {
    if (!only.empty() && only != "all" && only != c.arch) continue;
    const timing ours = with_fp32
                            ? time_ours(c.arch, c.input, c.batch, threads, 3, iters, math_precision::fp32)
                            : timing{0, 0};
    const timing ours_bf16 =
        with_bf16 ? time_ours(c.arch, c.input, c.batch, threads, 3, iters, bf16) : timing{0, 0};
    struct row {
      std::string label;
      timing ours, peer;
      bool have_peer;
    };
    std::vector<row> rows;
    for (const bool in_bf16 : {false, true}) {
      if (in_bf16 ? !with_bf16 : !with_fp32) continue;
      row r{in_bf16 ? std::string(c.label) + " " + to_string(bf16) : std::string(c.label),
            in_bf16 ? ours_bf16 : ours, timing{}, false};
      std::string why;
      r.have_peer = time_peer(c.arch, c.input, c.batch, threads, 3, iters, in_bf16, r.peer, why);
      if (!r.have_peer) {
        std::fprintf(stderr, "peer%s: %s\n", in_bf16 ? " (bf16 autocast)" : "", why.c_str());
        ++failures;
      }
      rows.push_back(std::move(r));
    }
    for (const row& r : rows) {
      if (r.have_peer)
        std::printf("%-40s %6d %12.1f %12.1f %12.1f %12.1f %8.2f\n", r.label.c_str(), c.batch,
                    r.ours.median_ms, r.ours.min_ms, r.peer.median_ms, r.peer.min_ms,
                    r.ours.median_ms / r.peer.median_ms);
      else
        std::printf("%-40s %6d %12.1f %12.1f %12s %12s %8s\n", r.label.c_str(), c.batch, r.ours.median_ms,
                    r.ours.min_ms, "-", "-", "-");
    }
    if (with_bf16 && with_fp32)
      std::printf("%-40s %6s %12.2f  (%s median / fp32 median)\n", "", "",
                  ours_bf16.median_ms / ours.median_ms, to_string(bf16));
    std::fflush(stdout);
  }
  std::printf(
      "\nratio = petra median / torch median (targets for both models: fp32 <= 0.6, bf16 <= 0.7); the peer "
      "of a\n"
      "bf16 row runs its forward and loss under torch.autocast(bf16). Each timing ran %d steps (3 "
      "warm-up).\n",
      3 + iters);
  return failures ? 1 : 0;
}

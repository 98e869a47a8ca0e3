// Whether bf16 pays for the convolutions on this CPU: one coupling convolution of the default
// preset's and RevNet-18's widths (3×3, stride 1, C → C, no bias), its forward and backward (dw,
// then dx from the same dy, as a layer's backward runs them), through petra's oneDNN engine: fp32
// as a CPU stage runs it (Winograd where it pays, else direct), fp32 direct, and bf16 operands; the
// weights written before every step, so that their converted copy is made again as in training.
// Against PyTorch's conv2d in fp32 and under torch.autocast(bf16) (bench/peer/revnet_peer.py
// conv), same shapes and threads, in the same run. Prints medians, each side's bf16 / fp32 and the
// bf16 GFLOP/s (the bf16 columns only on a CPU with bf16 instructions), and petra's fp32 over
// PyTorch's. Usage: bench_conv_kernels [THREADS [ITERS [N,C,HW ...]]]: shapes given replace the
// two models' ones.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/revnet_peer_run.hpp"
#include "compute/cpu/bf16_support.hpp"
#include "compute/cpu/conv2d_engine.hpp"

namespace {

using namespace petra;

struct conv_case {
  const char* model;
  int64_t n, c, hw;
};

enum class mode { fp32, direct, bf16 };  // fp32: as a stage runs it (Winograd where it pays)

/// Median ms of forward + backward filter + backward data on petra's engine.
double time_ours(const conv_case& cc, mode m, int threads, int warmup, int iters) {
  conv2d_engine engine(threads, m == mode::bf16, m == mode::fp32);
  conv2d_geometry g;
  g.n = cc.n, g.c = cc.c, g.h = cc.hw, g.w = cc.hw, g.k = cc.c, g.r = 3, g.s = 3, g.stride = 1, g.padding = 1;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  auto filled = [&](const shape_t& shape) {
    tensor t = tensor::empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = uniform(rng);
    return t;
  };
  tensor x = filled({g.n, g.c, g.h, g.w}), w = filled({g.k, g.c, g.r, g.s}),
         dy = filled({g.n, g.k, g.p(), g.q()});
  tensor y = tensor::empty(dy.shape()), dx = tensor::empty(x.shape()), dw = tensor::zeros(w.shape());
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    w.data()[0] += 0.f;  // a write: the weights' converted copy is stale, as after an optimizer step
    const auto t0 = std::chrono::steady_clock::now();
    engine.forward(g, x.data(), w, nullptr, y.data());
    engine.backward_filter(g, x.data(), dy.data(), dw.data(), nullptr);
    engine.backward_data(g, dy.data(), w, dx.data());
    engine.forget_staged_dy();
    if (i >= warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// The peer's median ms for the same work; negative (and `why`) when it could not run.
double time_peer(const conv_case& cc, bool bf16, int threads, int warmup, int iters, std::string& why) {
  nlohmann::json j;
  if (!bench::run_revnet_peer("conv --shape " + std::to_string(cc.n) + "," + std::to_string(cc.c) + "," +
                                  std::to_string(cc.hw) + "," + std::to_string(cc.hw) + " --threads " +
                                  std::to_string(threads) + " --warmup " + std::to_string(warmup) +
                                  " --iters " + std::to_string(iters) + (bf16 ? " --autocast bf16" : ""),
                              j, why))
    return -1;
  return j["median_ms"].get<double>();
}

/// "N,C,HW" → a case; false when it is not three positive integers.
bool parse_case(const std::string& text, conv_case& out) {
  std::istringstream in(text);
  char comma1 = 0, comma2 = 0;
  std::string rest;
  if (!(in >> out.n >> comma1 >> out.c >> comma2 >> out.hw) || comma1 != ',' || comma2 != ',' || (in >> rest))
    return false;
  out.model = "given";
  return out.n > 0 && out.c > 0 && out.hw > 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 15;
  if (threads < 1 || iters < 1) {
    std::fprintf(stderr, "bench_conv_kernels: THREADS and ITERS must be positive (got %d, %d)\n", threads,
                 iters);
    return 2;
  }
  // Without bf16 instructions oneDNN has no bf16 kernels: the fp32 columns only.
  const std::string missing = missing_bf16_instructions(cpu_flags());
  const bool with_bf16 = missing.empty();
  std::vector<conv_case> cases = {{"default preset", 64, 16, 28}, {"default preset", 64, 32, 14},
                                  {"default preset", 64, 64, 7},  {"RevNet-18", 32, 64, 32},
                                  {"RevNet-18", 32, 128, 16},     {"RevNet-18", 32, 256, 8},
                                  {"RevNet-18", 32, 512, 4}};
  if (argc > 3) cases.clear();
  for (int a = 3; a < argc; ++a) {
    conv_case given{};
    if (!parse_case(argv[a], given)) {
      std::fprintf(stderr,
                   "bench_conv_kernels: shape %d is '%s', expected N,C,HW (three positive integers)\n", a - 2,
                   argv[a]);
      return 2;
    }
    cases.push_back(given);
  }
  std::printf(
      "one 3x3 convolution (C -> C, stride 1, no bias): forward + backward (dw, dx), %d threads, median of "
      "%d, ms\n\n",
      threads, iters);
  if (!with_bf16) std::printf("no bf16 columns: %s\n\n", missing.c_str());
  std::printf("%-15s %-14s %10s %10s %10s %9s %10s %10s %9s %12s %10s\n", "model", "x (N,C,HxW)", "fp32",
              "direct", "bf16", "bf16/fp32", "torch fp32", "torch bf16", "bf16/fp32", "bf16 GFLOP/s",
              "fp32/torch");
  int failures = 0;
  for (const conv_case& cc : cases) {
    const double fp32 = time_ours(cc, mode::fp32, threads, 3, iters);
    const double direct = time_ours(cc, mode::direct, threads, 3, iters);
    const double bf16 = with_bf16 ? time_ours(cc, mode::bf16, threads, 3, iters) : -1;
    std::string why;
    const double peer = time_peer(cc, false, threads, 3, iters, why);
    const double peer_bf16 = peer < 0 || !with_bf16 ? -1 : time_peer(cc, true, threads, 3, iters, why);
    if (peer < 0 || (with_bf16 && peer_bf16 < 0)) {
      std::fprintf(stderr, "peer: %s\n", why.c_str());
      ++failures;
    }
    // Three convolutions' multiply-adds (forward, dw, dx), each N·C·C·9·H·W.
    const double flop = 3.0 * 2.0 * static_cast<double>(cc.n * cc.c * cc.c * 9 * cc.hw * cc.hw);
    const std::string shape = std::to_string(cc.n) + "," + std::to_string(cc.c) + "," +
                              std::to_string(cc.hw) + "x" + std::to_string(cc.hw);
    char ours_bf16[64] = "         -         -";
    if (bf16 > 0)
      std::snprintf(ours_bf16, sizeof ours_bf16, "%10.2f %9.2f", bf16, bf16 / std::min(fp32, direct));
    char peer_cells[64] = "         -          -         -";
    if (peer > 0 && peer_bf16 > 0)
      std::snprintf(peer_cells, sizeof peer_cells, "%10.2f %10.2f %9.2f", peer, peer_bf16, peer_bf16 / peer);
    else if (peer > 0)
      std::snprintf(peer_cells, sizeof peer_cells, "%10.2f          -         -", peer);
    char rates[64] = "           -          -";
    if (bf16 > 0 && peer > 0)
      std::snprintf(rates, sizeof rates, "%12.1f %10.2f", flop / (bf16 * 1e6), fp32 / peer);
    else if (peer > 0)
      std::snprintf(rates, sizeof rates, "           - %10.2f", fp32 / peer);
    std::printf("%-15s %-14s %10.2f %10.2f %s %s %s\n", cc.model, shape.c_str(), fp32, direct, ours_bf16,
                peer_cells, rates);
    std::fflush(stdout);
  }
  std::printf(
      "\npetra: its oneDNN engine as a CPU stage runs it (fp32: Winograd from 32 channels in blocks of 16, "
      "else direct;\nbf16: bf16 operands, fp32 results); bf16/fp32 = bf16 over the faster fp32. torch: "
      "F.conv2d, bf16 under\ntorch.autocast. A bf16/fp32 at or above 1 says this CPU's bf16 convolution "
      "kernels do not pay.\n");
  return failures ? 1 : 0;
}

// bench_gpu_step's (b) and (d): a reversible stage's backward, plain against PaReprop's overlapped
// rebuild on a second stream, over RevNet couplings and RevViT transformer blocks.
#include "bench/gpu_overlap.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "compute/backend_factory.hpp"
#include "compute/blocks/coupling.hpp"
#include "compute/blocks/transformer.hpp"
#include "compute/init.hpp"
#include "compute/pipeline/stage.hpp"

namespace petra::bench {
namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

/// One reversible stage ((b): `blocks` basic couplings of `width` channels; (d): transformer
/// blocks) and the times of its backward.
struct timed_stage {
  stage st;
  std::vector<double> ms;

  timed_stage(backend& be, int blocks, int width, std::unique_ptr<backend> rebuild)
      : timed_stage(be, couplings(be, blocks, width), std::move(rebuild)) {}
  timed_stage(backend& be, std::vector<std::unique_ptr<block>> blocks, std::unique_ptr<backend> rebuild)
      : st(1, std::move(blocks), be, frozen(), stage_options{}) {
    if (rebuild) st.overlap_rebuild(std::move(rebuild));
  }
  static std::vector<std::unique_ptr<block>> couplings(backend& be, int blocks, int width) {
    std::vector<std::unique_ptr<block>> out;
    for (int b = 0; b < blocks; ++b)
      out.push_back(std::make_unique<coupling_block>(be, "c" + std::to_string(b), conv_chain::basic(width),
                                                     static_cast<uint64_t>(b)));
    return out;
  }
  static optimizer_settings frozen() {
    optimizer_settings opt;
    opt.schedule = schedule_kind::constant;
    opt.lr = 0.0;                // the weights stay put: every run measures the same work
    opt.accumulation = 1 << 20;  // and no optimizer step is timed with the backward
    return opt;
  }
  /// A forward (not timed), then the backward from its output, timed to the GPU's end of it.
  void run(backend& be, const activation& x, const activation& dy, int64_t id, bool timed) {
    const activation y = st.forward(x, id, id);
    be.synchronize();
    const auto t0 = clock_type::now();
    st.backward(y, dy, id, id);
    be.synchronize();  // the rebuilds' stream feeds the stage's: its end is the backward's
    if (timed) ms.push_back(ms_since(t0));
  }
};

/// The backward of `plain` and `overlapped` on the same random input and gradient of `shape` (both
/// streams), round-robin so that clock changes fall on both alike: their medians of `iters` after 3.
std::pair<double, double> time_pair(backend& be, timed_stage& plain, timed_stage& overlapped,
                                    const shape_t& shape, uint64_t seed, const char* stream, int iters) {
  init_rng rng(seed, stream);
  auto random = [&] {
    tensor t = tensor::empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.uniform(-1.f, 1.f);
    return be.from_host(t);
  };
  const activation x{random(), random()}, dy{random(), random()};
  for (int i = 0; i < 3 + iters; ++i) {
    plain.run(be, x, dy, i, i >= 3);
    overlapped.run(be, x, dy, i, i >= 3);
  }
  return {median(plain.ms), median(overlapped.ms)};
}

}  // namespace

void bench_overlap(backend& be, const backend_options& options, math_precision precision, int iters) {
  const int blocks = 3;
  for (int batch : {32, 128})
    for (auto [width, side] : {std::pair{64, 32}, {128, 16}, {256, 8}, {512, 4}}) {
      timed_stage plain(be, blocks, width, nullptr);
      timed_stage overlapped(be, blocks, width, make_backend(device::parse("cuda:0"), options));
      const auto [plain_ms, overlap_ms] =
          time_pair(be, plain, overlapped, {batch, width, side, side},
                    static_cast<uint64_t>(width * 1000 + batch), "bench_gpu_overlap", iters);
      std::printf(
          "{\"bench\": \"reversible_overlap\", \"precision\": \"%s\", \"blocks\": %d, \"width\": %d, "
          "\"side\": %d, \"batch\": %d, \"plain_ms\": %.3f, \"overlap_ms\": %.3f, \"iters\": %d}\n",
          to_string(precision), blocks, width, side, batch, plain_ms, overlap_ms, iters);
      std::fflush(stdout);
    }
}

void bench_transformer_overlap(backend& be, const backend_options& options, math_precision precision,
                               int iters, const std::vector<int>& batches) {
  const int blocks = 3;
  const int64_t tokens = 197;
  struct vit {
    const char* name;
    int width, heads;
  };
  for (const vit& v : {vit{"ViT-S", 384, 6}, vit{"ViT-B", 768, 12}, vit{"ViT-L", 1024, 16}})
    for (int batch : batches) try {
        const auto make = [&] {
          std::vector<std::unique_ptr<block>> out;
          for (int b = 0; b < blocks; ++b)
            out.push_back(std::make_unique<transformer_block>(be, "t" + std::to_string(b), v.width, v.heads,
                                                              4 * v.width, static_cast<uint64_t>(b)));
          return out;
        };
        timed_stage plain(be, make(), nullptr);
        timed_stage overlapped(be, make(), make_backend(device::parse("cuda:0"), options));
        const auto [plain_ms, overlap_ms] =
            time_pair(be, plain, overlapped, {batch, tokens, v.width},
                      static_cast<uint64_t>(v.width * 1000 + batch), "bench_gpu_transformer_overlap", iters);
        std::printf(
            "{\"bench\": \"transformer_overlap\", \"model\": \"%s\", \"precision\": \"%s\", \"blocks\": %d, "
            "\"width\": %d, \"heads\": %d, \"tokens\": %lld, \"batch\": %d, \"plain_ms\": %.3f, "
            "\"overlap_ms\": %.3f, \"speedup\": %.3f, \"iters\": %d}\n",
            v.name, to_string(precision), blocks, v.width, v.heads, static_cast<long long>(tokens), batch,
            plain_ms, overlap_ms, plain_ms / overlap_ms, iters);
        std::fflush(stdout);
      } catch (const std::exception& e) {  // e.g. out of memory at the largest sizes: the others still run
        std::printf(
            "{\"bench\": \"transformer_overlap\", \"model\": \"%s\", \"batch\": %d, \"error\": \"%s\"}\n",
            v.name, batch, e.what());
        std::fflush(stdout);
      }
}

}  // namespace petra::bench

// The backward of a reversible stage of couplings (two by default), the plain order against PaReprop's
// overlapped one (block i−1's input rebuilt on a second CPU backend while block i's gradients are
// computed), on the default preset's coupling stage and on RevNet-18's widths, or on RevViT
// transformer blocks (revvit_tiny_fmnist's and revvit_small_cifar10's widths). Median of `runs`.
// Usage: bench_overlap_rebuild [runs=15] [threads=2] [batches=32,128] [all|main] [blocks=2]
// [revnet|revvit] (main: plain and overlap +1 only, the pair whose bits agree, for the long cases;
// blocks: blocks in the stage, ≥ 2: with n blocks n − 1 rebuilds can hide behind gradients)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "compute/blocks/coupling.hpp"
#include "compute/blocks/transformer.hpp"
#include "compute/init.hpp"
#include "compute/pipeline/stage.hpp"

namespace {

using namespace petra;
using clock_type = std::chrono::steady_clock;

tensor random_tensor(const shape_t& shape, uint64_t seed) {
  init_rng rng(seed, "bench_overlap_rebuild");
  tensor t = tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.uniform(-1.f, 1.f);
  return t;
}

/// One way to run the backward: the stage's threads, and the rebuild's (0: the plain order).
struct schedule {
  const char* name;
  int stage_threads;
  int rebuild_threads;
};

/// One stage to time: `blocks` couplings of `width` channels on side × side images, or (`heads` > 0)
/// transformer blocks of `width` over `side` tokens with `heads` heads and an MLP of 4 × width.
struct stage_case {
  std::string name;
  int width, side, batch;
  int heads = 0;
  shape_t shape() const {
    return heads > 0 ? shape_t{batch, side, width} : shape_t{batch, width, side, side};
  }
};

/// A stage of `n_blocks` blocks of case `c` run on one schedule, and its timed backwards.
struct timed_stage {
  std::unique_ptr<backend> be;
  std::unique_ptr<stage> st;
  activation x, dy;
  std::vector<double> seconds;
  int64_t id = 0;

  timed_stage(const schedule& s, const stage_case& c, int n_blocks) : be(make_cpu_backend(s.stage_threads)) {
    std::vector<std::unique_ptr<block>> blocks;
    for (int b = 0; b < n_blocks; ++b)
      if (c.heads > 0)
        blocks.push_back(std::make_unique<transformer_block>(*be, "t" + std::to_string(b), c.width, c.heads,
                                                             4 * c.width, static_cast<uint64_t>(b)));
      else
        blocks.push_back(
            std::make_unique<coupling_block>(*be, "c" + std::to_string(b), conv_chain::basic(c.width), b));
    optimizer_settings opt;
    opt.schedule = schedule_kind::constant;
    opt.lr = 0.0;                // the weights stay put: every run measures the same work
    opt.accumulation = 1 << 20;  // and no optimizer step is timed with the backward
    st = std::make_unique<stage>(1, std::move(blocks), *be, opt, stage_options{});
    if (s.rebuild_threads > 0) st->overlap_rebuild(make_cpu_backend(s.rebuild_threads));
    const shape_t shape = c.shape();
    x = {random_tensor(shape, 1), random_tensor(shape, 2)};
    dy = {random_tensor(shape, 3), random_tensor(shape, 4)};
  }
  void run(bool timed) {
    const activation y = st->forward(x, id, id);
    const auto t0 = clock_type::now();
    st->backward(y, dy, id, id);
    ++id;
    if (timed) seconds.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  double median() {
    std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
    return seconds[seconds.size() / 2];
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::stoi(argv[1]) : 15;
  const int threads = argc > 2 ? std::stoi(argv[2]) : 2;
  std::vector<int> batches;
  std::stringstream list(argc > 3 ? argv[3] : "32,128");
  for (std::string b; std::getline(list, b, ',');) batches.push_back(std::stoi(b));

  const bool all_schedules = argc <= 4 || std::string(argv[4]) != "main";
  const int n_blocks = argc > 5 ? std::stoi(argv[5]) : 2;
  const std::string model = argc > 6 ? argv[6] : "revnet";
  if (runs < 1 || threads < 1 || n_blocks < 2 || batches.empty() ||
      (model != "revnet" && model != "revvit")) {
    std::fprintf(stderr,
                 "bench_overlap_rebuild: runs and threads must be >= 1, blocks >= 2, batches not empty, the "
                 "model revnet or revvit\n");
    return 2;
  }
  std::vector<stage_case> cases;
  if (model == "revnet") {
    cases.push_back({"default preset g1 (16ch, 28²)", 16, 28, 64});
    for (int batch : batches)
      for (auto [width, side] : {std::pair{64, 32}, {128, 16}, {256, 8}, {512, 4}})
        cases.push_back({"RevNet-18 width " + std::to_string(width) + " (" + std::to_string(side) + "²)",
                         width, side, batch});
  } else {
    for (int batch : batches) {
      cases.push_back({"revvit_tiny_fmnist (d 128, 4 heads, 49 tokens)", 128, 49, batch, 4});
      cases.push_back({"revvit_small_cifar10 (d 384, 6 heads, 64 tokens)", 384, 64, batch, 6});
    }
  }
  // The plain order on the stage's threads; overlapped with the gradients on the same threads (the
  // same bits) and the rebuild on one or as many more; and the stage's threads split in two (the
  // gradients on fewer threads: not the plain order's bits where an op's sum depends on its team).
  std::vector<schedule> schedules = {{"plain", threads, 0},
                                     {"overlap +1", threads, 1},
                                     {"overlap +T", threads, threads},
                                     {"split", std::max(1, threads / 2), std::max(1, threads - threads / 2)}};
  if (!all_schedules) schedules.resize(2);
  std::printf("backward of a %d-%s stage, ms (median of %d), %d stage threads\n", n_blocks,
              model == "revnet" ? "coupling" : "transformer-block", runs, threads);
  std::printf("| stage | micro-batch |");
  for (const schedule& s : schedules) std::printf(" %s |", s.name);
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < schedules.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const stage_case& c : cases) {
    std::printf("| %s | %d |", c.name.c_str(), c.batch);
    std::vector<std::unique_ptr<timed_stage>> stages;
    for (const schedule& s : schedules) stages.push_back(std::make_unique<timed_stage>(s, c, n_blocks));
    // Round-robin over the schedules, so that a shared machine's load falls on each alike.
    for (int i = 0; i < 2 + runs; ++i)
      for (auto& t : stages) t->run(i >= 2);
    for (auto& t : stages) std::printf(" %.1f |", 1e3 * t->median());
    std::printf("\n");
    std::fflush(stdout);
  }
}

// How fast the first stage of a pipeline consumes images on the CPU: RevNet-50's stage 1 (the
// ImageNet stem: conv7×7 s2, BN, ReLU, max-pool) under PETRA, one forward and one backward per
// micro-batch as on every tick, at micro-batch 64 on 3×224×224, to set beside bench_loader's
// decoding rate. Usage: bench_stage_rate [arch=revnet50] [micro_batch=64] [threads=2] [iters=10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "compute/init.hpp"
#include "compute/models/revnet.hpp"
#include "compute/pipeline/partition.hpp"
#include "compute/pipeline/stage.hpp"
#include "training/method.hpp"

namespace {

using namespace petra;
using clock_type = std::chrono::steady_clock;

tensor random_tensor(const shape_t& shape, uint64_t seed) {
  init_rng rng(seed, "bench_stage_rate");
  tensor t = tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.uniform(-1.f, 1.f);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string arch = argc > 1 ? argv[1] : "revnet50";
  const int batch = argc > 2 ? std::stoi(argv[2]) : 64;
  const int threads = argc > 3 ? std::stoi(argv[3]) : 2;
  const int iters = argc > 4 ? std::stoi(argv[4]) : 10;
  const int warmup = 2;

  revnet_spec spec = revnet_preset(arch);
  spec.imagenet_stem = true;
  spec.num_classes = 1000;
  spec.height = spec.width = 224;
  auto be = make_cpu_backend(threads);
  auto blocks = build_revnet(spec, *be, 0);
  const std::size_t count = blocks.size();
  auto groups = partition_blocks(std::move(blocks), resolve_partition({}, count));  // one block per stage
  optimizer_settings opt;
  opt.schedule = schedule_kind::constant;
  opt.lr = 0.01;
  stage first(0, std::move(groups.front()), *be, opt, method_options{}.for_stage(0, false));

  const activation x{random_tensor({batch, 3, spec.height, spec.width}, 1), {}};
  const activation y = first.evaluate(x);
  const activation dy{random_tensor(y.x1.shape(), 2),
                      y.two_streams() ? random_tensor(y.x2.shape(), 3) : tensor{}};
  std::vector<double> seconds;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = clock_type::now();
    const activation out = first.forward(x, i, i);
    first.backward(out, dy, i, i);  // the stem keeps its input: the backward pops it and recomputes
    if (i >= warmup) seconds.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf(
      "%s stage 1 (%s stem), micro-batch %d of 3×%d×%d, %d CPU threads: forward+backward median %.1f ms "
      "(min %.1f ms) over %d micro-batches = %.0f images/s\n",
      arch.c_str(), spec.imagenet_stem ? "ImageNet" : "CIFAR", batch, spec.height, spec.width, threads,
      1000 * median, 1000 * seconds.front(), iters, batch / median);
  return 0;
}

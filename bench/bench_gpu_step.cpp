// GPU benchmarks, run on the GPU machine by bench/gpu/run.sh (here: "skipped: no GPU"):
//  (a) one backprop training step of RevNet-18 (3×32×32, micro-batch 128): median ms;
//  (b) the reversible backward with and without two-stream overlap: not implemented yet;
//  (c) PETRA with J = 10 stages (one block each) against backprop on one GPU, in images/s,
//      both through the reference simulator (one backend, one stream).
// Prints one JSON line per measurement; run.sh puts the PyTorch peer's line beside (a).
//   bench_gpu_step [--batch 128] [--iters 50] [--warmup 10] [--micro-batches 60] [--tf32 0|1]
//                  [--methods 0|1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compute/backend_factory.hpp"
#include "compute/init.hpp"
#include "compute/models/revnet.hpp"
#include "compute/pipeline/method.hpp"
#include "compute/pipeline/partition.hpp"
#include "compute/pipeline/stage.hpp"
#include "training/simulator.hpp"
#include "training/tick_schedule.hpp"

namespace {

using namespace petra;
using clock_type = std::chrono::steady_clock;

struct settings {
  int batch = 128;
  int warmup = 10;
  int iters = 50;
  int micro_batches = 60;  // (c): per method
  bool tf32 = false;
  bool methods = true;  // run (c); off for a profile of the step alone
};

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

tensor random_images(int batch, const revnet_spec& spec, uint64_t seed) {
  init_rng rng(seed, "bench_gpu");
  tensor images = tensor::empty({batch, spec.in_channels, spec.height, spec.width});
  for (int64_t i = 0; i < images.numel(); ++i) images.data()[i] = rng.uniform(-1.f, 1.f);
  return images;
}

std::vector<int32_t> labels_for(int batch, int classes, int offset) {
  std::vector<int32_t> labels(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i) labels[static_cast<std::size_t>(i)] = (i + offset) % classes;
  return labels;
}

void wait_for(backend& be) { be.synchronize(); }

/// (a) forward + loss + backward + SGD step, J = 1, as bench_train_step on the CPU.
void bench_step(backend& be, const settings& s) {
  const revnet_spec spec = revnet_preset("revnet18");
  optimizer_settings opt;
  opt.schedule = schedule_kind::constant;
  stage_options taped;
  taped.taped = true;  // backprop: the forward keeps its tape for the backward
  stage whole(0, build_revnet(spec, be, 0), be, opt, taped);
  const activation x{be.from_host(random_images(s.batch, spec, 1)), {}};
  const std::vector<int32_t> labels = labels_for(s.batch, spec.num_classes, 0);
  std::vector<double> ms;
  for (int i = 0; i < s.warmup + s.iters; ++i) {
    const auto t0 = clock_type::now();
    const activation logits = whole.forward(x, i, i);
    tensor dlogits;
    be.softmax_cross_entropy(logits.x1, labels, &dlogits, nullptr);
    whole.backward({}, {dlogits, {}}, i, i);
    wait_for(be);
    if (i >= s.warmup) ms.push_back(ms_since(t0));
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "{\"bench\": \"step\", \"impl\": \"petra\", \"arch\": \"revnet18\", \"batch\": %d, \"tf32\": %s, "
      "\"median_ms\": %.3f, \"min_ms\": %.3f, \"iters\": %d, \"images_per_s\": %.1f}\n",
      s.batch, s.tf32 ? "true" : "false", ms[ms.size() / 2], ms.front(), s.iters,
      1000.0 * s.batch / ms[ms.size() / 2]);
}

/// (c) images/s of `kind` over `micro_batches` micro-batches (fill and drain included), after a
/// short warm-up run that lets cuDNN pick its algorithms.
void bench_method(backend& be, const settings& s, method_kind kind, int stages_wanted) {
  const revnet_spec spec = revnet_preset("revnet18");
  optimizer_settings opt;
  opt.schedule = schedule_kind::constant;
  opt.lr = 0.01;
  method_options method;
  method.kind = kind;
  auto blocks = build_revnet(spec, be, 0);
  const std::size_t block_count = blocks.size();
  std::vector<int> per_stage;
  if (stages_wanted == 1) per_stage = {static_cast<int>(block_count)};
  auto groups = partition_blocks(std::move(blocks), resolve_partition(per_stage, block_count));
  std::vector<std::unique_ptr<stage>> stages;
  for (std::size_t j = 0; j < groups.size(); ++j)
    stages.push_back(
        std::make_unique<stage>(static_cast<int>(j), std::move(groups[j]), be, opt, method.for_stage(0)));
  std::vector<stage*> order;
  for (auto& st : stages) order.push_back(st.get());
  simulator sim(order, be, entry_spacing(kind, order.size()));
  const tensor images = be.from_host(random_images(s.batch, spec, 2));
  auto feed = [&](int count) {
    int64_t next_id = 0;
    return sim.run([&, count](micro_batch& mb) mutable {
      if (next_id >= count) return false;
      mb.id = next_id;
      mb.images = activation{images, {}};
      mb.labels = labels_for(s.batch, spec.num_classes, static_cast<int>(next_id++));
      return true;
    });
  };
  feed(std::max(2, static_cast<int>(groups.size())));  // warm-up
  wait_for(be);
  const auto t0 = clock_type::now();
  const run_totals totals = feed(s.micro_batches);
  wait_for(be);
  const double ms = ms_since(t0);
  std::printf(
      "{\"bench\": \"method\", \"method\": \"%s\", \"stages\": %zu, \"batch\": %d, \"micro_batches\": %d, "
      "\"ticks\": %lld, \"ms\": %.1f, \"images_per_s\": %.1f, \"mean_loss\": %.4f}\n",
      method.str().c_str(), stages.size(), s.batch, s.micro_batches, static_cast<long long>(totals.ticks), ms,
      1000.0 * static_cast<double>(totals.samples) / ms, totals.mean_loss());
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  if (argc % 2 == 0) {
    std::fprintf(stderr, "bench_gpu_step: option %s has no value (options come as --name value)\n",
                 argv[argc - 1]);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (key == "--batch")
      s.batch = value;
    else if (key == "--iters")
      s.iters = value;
    else if (key == "--warmup")
      s.warmup = value;
    else if (key == "--micro-batches")
      s.micro_batches = value;
    else if (key == "--tf32")
      s.tf32 = value != 0;
    else if (key == "--methods")
      s.methods = value != 0;
    else {
      std::fprintf(stderr,
                   "bench_gpu_step: unknown option %s (use --batch --iters --warmup --micro-batches --tf32 "
                   "--methods)\n",
                   argv[i]);
      return 2;
    }
  }
  if (s.batch < 2 || s.iters < 1 || s.warmup < 0 || s.micro_batches < 1) {
    std::fprintf(stderr,
                 "bench_gpu_step: need --batch >= 2, --iters >= 1, --warmup >= 0, --micro-batches >= 1\n");
    return 2;
  }
  std::string why;
  if (!cuda_usable(&why)) {
    std::printf("skipped: no GPU (%s)\n", why.c_str());
    return 0;
  }
  backend_options options;
  options.precision = s.tf32 ? math_precision::tf32 : math_precision::fp32;
  auto be = make_backend(device::parse("cuda:0"), options);
  std::fprintf(stderr, "backend: %s\n", be->name().c_str());
  bench_step(*be, s);
  std::printf("{\"bench\": \"reversible_overlap\", \"status\": \"not implemented\"}\n");
  if (!s.methods) return 0;
  bench_method(*be, s, method_kind::backprop, 1);
  bench_method(*be, s, method_kind::petra, 10);
  return 0;
}

// GPU benchmarks, run on the GPU machine by bench/gpu/run.sh (here: "skipped: no GPU"):
//  (a) one backprop training step of RevNet-18 (3×32×32, micro-batch 128) in the chosen
//      precision (fp32, TF32, bf16 on tensor cores): median ms;
//  (b) a reversible stage's backward over 3 couplings at RevNet-18's widths, micro-batch 32 and
//      128: the plain order against PaReprop's overlapped rebuild on a second stream, median ms;
//  (c) PETRA with J = 10 stages (one block each) against backprop on one GPU, in images/s,
//      both through the reference simulator (one backend, one stream);
//  (d) with --transformer 1: a reversible stage of 3 RevViT transformer blocks at ViT-S, ViT-B and
//      ViT-L widths (197 tokens), micro-batches --transformer-batches (8,32,128): the plain order
//      against PaReprop's overlapped rebuild on a second stream, median ms (PaReprop's own case).
// Prints one JSON line per measurement; run.sh puts the PyTorch peer's line beside (a).
//   bench_gpu_step [--batch 128] [--iters 50] [--warmup 10] [--micro-batches 60]
//                  [--precision fp32|tf32|bf16|bf16_emulated] [--tf32 0|1 (= --precision tf32)]
//                  [--search auto|heuristic|timed] [--algorithms FILE] [--record FILE]
//                  [--methods 0|1] [--overlap 0|1] [--overlap-iters 20] [--step 0|1]
//                  [--transformer 0|1] [--transformer-batches 8,32,128]
// --search: how the convolutions' algorithms are found (runtime.cudnn_search; auto = timed here,
// as the backend is not deterministic); the warm-up steps include the one search per shape.
// --algorithms: a recorded cudnn_algorithms.json whose choices are taken first
// (runtime.cudnn_algorithms); --record: write what was chosen to FILE in that format.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/gpu_overlap.hpp"
#include "bench/gpu_span.hpp"
#include "compute/backend_factory.hpp"
#include "compute/init.hpp"
#include "compute/models/revnet.hpp"
#include "compute/pipeline/partition.hpp"
#include "compute/pipeline/stage.hpp"
#include "compute/serialize/atomic_file.hpp"
#include "training/conv_algorithm_file.hpp"
#include "training/method.hpp"
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
  math_precision precision = math_precision::fp32;
  conv_search search = conv_search::automatic;
  std::string algorithms;    // a recorded file to repeat
  std::string record;        // where to write the choices
  bool methods = true;       // run (c); off for a profile of the step alone
  bool overlap = true;       // run (b)
  int overlap_iters = 20;    // (b), (d): timed backwards per schedule and shape, after 3
  bool step = true;          // run (a)
  bool transformer = false;  // run (d)
  std::vector<int> transformer_batches{8, 32, 128};  // (d)
};

/// runtime.precision's names; false for another.
bool parse_precision(const std::string& name, math_precision& out) {
  for (math_precision p :
       {math_precision::fp32, math_precision::tf32, math_precision::bf16, math_precision::bf16_emulated})
    if (name == to_string(p)) {
      out = p;
      return true;
    }
  return false;
}

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
  std::vector<double> ms, gpu_ms;
  float loss = 0;
  bench::gpu_span span(be);
  for (int i = 0; i < s.warmup + s.iters; ++i) {
    const auto t0 = clock_type::now();
    span.start();
    const activation logits = whole.forward(x, i, i);
    tensor dlogits;
    // No host wait inside the step: the loss is summed on the device and read after it.
    const deferred_loss pending = be.softmax_cross_entropy_deferred(logits.x1, labels, &dlogits);
    whole.backward({}, {dlogits, {}}, i, i);
    span.stop();
    wait_for(be);
    loss = pending.get();
    if (i >= s.warmup) {
      ms.push_back(ms_since(t0));
      gpu_ms.push_back(span.ms());
    }
  }
  if (!std::isfinite(loss)) {
    std::fprintf(stderr, "bench_gpu_step: the loss became %g: the timing is not trustworthy\n", loss);
    std::exit(1);
  }
  std::sort(ms.begin(), ms.end());
  std::sort(gpu_ms.begin(), gpu_ms.end());
  std::printf(
      "{\"bench\": \"step\", \"impl\": \"petra\", \"arch\": \"revnet18\", \"batch\": %d, "
      "\"precision\": \"%s\", \"search\": \"%s\", \"recorded\": %s, \"tf32\": %s, \"median_ms\": %.3f, "
      "\"min_ms\": %.3f, "
      "\"gpu_median_ms\": %.3f, \"iters\": %d, \"images_per_s\": %.1f, \"last_loss\": %.4f}\n",
      s.batch, to_string(s.precision), to_string(resolved(s.search, false)),
      s.algorithms.empty() ? "false" : "true", s.precision == math_precision::tf32 ? "true" : "false",
      ms[ms.size() / 2], ms.front(), gpu_ms[gpu_ms.size() / 2], s.iters, 1000.0 * s.batch / ms[ms.size() / 2],
      loss);
  std::fflush(stdout);
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
    stages.push_back(std::make_unique<stage>(static_cast<int>(j), std::move(groups[j]), be, opt,
                                             method.for_stage(0, j + 1 == groups.size())));
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
      "{\"bench\": \"method\", \"precision\": \"%s\", \"method\": \"%s\", \"stages\": %zu, \"batch\": %d, "
      "\"micro_batches\": %d, "
      "\"ticks\": %lld, \"ms\": %.1f, \"images_per_s\": %.1f, \"mean_loss\": %.4f}\n",
      to_string(s.precision), method.str().c_str(), stages.size(), s.batch, s.micro_batches,
      static_cast<long long>(totals.ticks), ms, 1000.0 * static_cast<double>(totals.samples) / ms,
      totals.mean_loss());
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
      s.precision = value != 0 ? math_precision::tf32 : math_precision::fp32;
    else if (key == "--precision") {
      if (!parse_precision(argv[i + 1], s.precision)) {
        std::fprintf(stderr, "bench_gpu_step: --precision %s: use fp32, tf32, bf16 or bf16_emulated\n",
                     argv[i + 1]);
        return 2;
      }
    } else if (key == "--search") {
      const std::string name = argv[i + 1];
      if (name == "auto")
        s.search = conv_search::automatic;
      else if (name == "heuristic")
        s.search = conv_search::heuristic;
      else if (name == "timed")
        s.search = conv_search::timed;
      else {
        std::fprintf(stderr, "bench_gpu_step: --search %s: use auto, heuristic or timed\n", argv[i + 1]);
        return 2;
      }
    } else if (key == "--algorithms")
      s.algorithms = argv[i + 1];
    else if (key == "--record")
      s.record = argv[i + 1];
    else if (key == "--methods")
      s.methods = value != 0;
    else if (key == "--overlap")
      s.overlap = value != 0;
    else if (key == "--overlap-iters")
      s.overlap_iters = value;
    else if (key == "--step")
      s.step = value != 0;
    else if (key == "--transformer")
      s.transformer = value != 0;
    else if (key == "--transformer-batches") {
      s.transformer_batches.clear();
      std::stringstream list(argv[i + 1]);
      for (std::string b; std::getline(list, b, ',');) s.transformer_batches.push_back(std::atoi(b.c_str()));
      for (int b : s.transformer_batches)
        if (b < 1) {
          std::fprintf(stderr, "bench_gpu_step: --transformer-batches %s: give positive counts, e.g. 8,32\n",
                       argv[i + 1]);
          return 2;
        }
    } else {
      std::fprintf(
          stderr,
          "bench_gpu_step: unknown option %s (use --batch --iters --warmup --micro-batches --precision "
          "--tf32 --search --algorithms --record --methods --overlap --overlap-iters --step --transformer "
          "--transformer-batches)\n",
          argv[i]);
      return 2;
    }
  }
  if (s.batch < 2 || s.iters < 1 || s.warmup < 0 || s.micro_batches < 1 || s.overlap_iters < 1) {
    std::fprintf(stderr,
                 "bench_gpu_step: need --batch >= 2, --iters >= 1, --warmup >= 0, --micro-batches >= 1, "
                 "--overlap-iters >= 1\n");
    return 2;
  }
  backend_options options;
  options.precision = s.precision;
  options.cudnn_search = s.search;
  if (!s.algorithms.empty()) {
    try {
      options.cudnn_recorded = read_conv_algorithms(s.algorithms);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_gpu_step: --algorithms: %s\n", e.what());
      return 2;
    }
  }
  std::string why;
  if (!cuda_usable(&why)) {
    std::printf("skipped: no GPU (%s)\n", why.c_str());
    return 0;
  }
  auto be = make_backend(device::parse("cuda:0"), options);
  std::fprintf(stderr, "backend: %s\n", be->name().c_str());
  if (s.step) bench_step(*be, s);
  if (!s.record.empty()) {
    write_file_atomically(s.record, [&](std::ostream& out) {
      out << conv_algorithms_json(conv_algorithm_choices(options)).dump(1) << "\n";
    });
  }
  if (s.overlap) bench::bench_overlap(*be, options, s.precision, s.overlap_iters);
  if (s.transformer)
    bench::bench_transformer_overlap(*be, options, s.precision, s.overlap_iters, s.transformer_batches);
  if (!s.methods) return 0;
  bench_method(*be, s, method_kind::backprop, 1);
  bench_method(*be, s, method_kind::petra, 10);
  return 0;
}

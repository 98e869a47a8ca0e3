// The actor runtime with stages on a real GPU (docs/design.md §5): the default preset (J = 8) on
// cuda:0, mixed with CPU stages and next to a `petra node` process, against the all-CPU run within
// the parity tolerance of tests/cuda; skipped where no GPU is usable.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "compute/backend_factory.hpp"
#include "tests/actors/node_process.hpp"
#include "tests/actors/runtime_fixture.hpp"
#include "tests/actors/snapshot_runs.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// 20 micro-batches of 64 images: 10 optimizer steps per stage at k = 2 (as the GPU simulator
/// parity test of tests/cuda takes), 20 + 2(J − 1) = 34 ticks with the drain.
constexpr int64_t micro_batches = 20;
/// tests/cuda/simulator_parity_test.cpp's bound for a whole run where round-off stays small.
constexpr double run_tolerance = 1e-3;
/// Ten optimizer steps of the default preset amplify round-off more than that: the all-CPU run
/// with 2 compute threads per stage instead of 1 (another summation order, nothing else) differs
/// from it by ~3.5e-3 (measured 2026-11-26). A GPU run must stay within this many times that
/// spread, which each test measures.
constexpr double spread_factor = 4;

/// Fashion-MNIST's folder: $PETRA_FASHION_MNIST where set (the GPU bundle carries its own copy),
/// else the Debian package's.
std::string fashion_mnist_dir() {
  const char* from_environment = std::getenv("PETRA_FASHION_MNIST");
  return from_environment && *from_environment ? from_environment : "/usr/share/datasets/fashion-mnist";
}

/// Empty when this machine can run the GPU tests, else why not.
std::string skip_reason() {
  std::string why;
  if (!cuda_usable(&why)) return "no usable GPU: " + why;
  if (!std::filesystem::exists(fashion_mnist_dir() + "/train-images-idx3-ubyte.gz"))
    return fashion_mnist_dir() + " has no Fashion-MNIST (set PETRA_FASHION_MNIST)";
  return "";
}

#define PETRA_REQUIRE_GPU() \
  if (const std::string why = skip_reason(); !why.empty()) PETRA_SKIP(why)

/// The default preset, 20 micro-batches of one epoch, deterministic fp32 GPU math.
config::run_config gpu_config(const std::string& mode, const std::string& devices,
                              const std::string& nodes = "", const std::string& threads = "",
                              const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = {"runtime.mode=" + mode, "runtime.deterministic=true",
                                   "runtime.precision=fp32", "data.path=" + fashion_mnist_dir(),
                                   "data.train_limit=" + std::to_string(micro_batches * 64),
                                   "data.test_limit=64", "training.epochs=1", "output.progress=false",
                                   // No progress for a minute is no hang under compute-sanitizer.
                                   "faults.stall_seconds=240"};
  if (!devices.empty()) sets.push_back("pipeline.devices=" + devices);
  if (!nodes.empty()) sets.push_back("pipeline.nodes=" + nodes);
  if (!threads.empty()) sets.push_back("pipeline.threads=" + threads);
  sets.insert(sets.end(), extra.begin(), extra.end());
  return config::load_config("default", sets);
}

/// ‖a − b‖ / ‖b‖ over every tensor together (weights, momentum, BN running statistics), b the
/// reference; `worst` names the tensor with the largest relative error of its own.
double relative_error(const trained& a, const trained& b, std::string* worst) {
  REQUIRE(a.weights.size() == b.weights.size());
  double diff = 0, norm = 0, worst_error = -1;
  for (std::size_t k = 0; k < a.weights.size(); ++k) {
    const tensor& x = a.weights[k].second;
    const tensor& y = b.weights[k].second;
    REQUIRE(a.weights[k].first == b.weights[k].first);
    REQUIRE(x.shape() == y.shape());
    double d_k = 0, n_k = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double d = static_cast<double>(x.data()[i]) - y.data()[i];
      d_k += d * d;
      n_k += static_cast<double>(y.data()[i]) * y.data()[i];
    }
    diff += d_k;
    norm += n_k;
    const double e = n_k > 0 ? std::sqrt(d_k / n_k) : std::sqrt(d_k);
    if (e > worst_error) {
      worst_error = e;
      std::ostringstream s;
      s << a.weights[k].first << " (" << e << ")";
      *worst = s.str();
    }
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

/// The all-CPU reference run, and how far the same run with 2 threads per stage lands from it.
struct cpu_reference {
  trained run;
  double spread = 0;
};

cpu_reference cpu_reference_run(const std::vector<std::string>& extra = {}) {
  cpu_reference r;
  // One thread per stage, said: left empty, the stages would split the machine's cores.
  r.run = train_once(gpu_config("lockstep", "", "", "[1,1,1,1,1,1,1,1]", extra), micro_batches);
  const trained two_threads =
      train_once(gpu_config("lockstep", "", "", "[2,2,2,2,2,2,2,2]", extra), micro_batches);
  std::string worst;
  r.spread = relative_error(two_threads, r.run, &worst);
  return r;
}

/// Checks a GPU run against the CPU reference: the same micro-batches, the loss and every tensor
/// within the CPU's own spread (times spread_factor), and never looser than needed.
void check_follows(const trained& run, const cpu_reference& cpu) {
  const double tolerance = std::max(run_tolerance, spread_factor * cpu.spread);
  CHECK(run.totals.micro_batches == cpu.run.totals.micro_batches);
  CHECK(run.totals.loss_sum == doctest::Approx(cpu.run.totals.loss_sum).epsilon(tolerance));
  std::string worst;
  const double error = relative_error(run, cpu.run, &worst);
  INFO("weights, momentum and running statistics: relative error " << error << ", worst tensor " << worst
                                                                   << "; CPU spread " << cpu.spread);
  CHECK(std::isfinite(error));
  CHECK(error < tolerance);
  MESSAGE("relative error against the CPU: " << error << " (worst tensor " << worst << "); the CPU's own "
                                             << "spread (1 vs 2 threads per stage): " << cpu.spread);
}

const std::string all_cuda0 = "[cuda:0,cuda:0,cuda:0,cuda:0,cuda:0,cuda:0,cuda:0,cuda:0]";
const std::string all_local = "[local,local,local,local,local,local,local,local]";

}  // namespace

// With deterministic algorithms every GPU op is a fixed function of its inputs (no atomics in our
// kernels, cuDNN's deterministic algorithms, spatial BN, cuBLAS on one stream per handle), and
// simulate builds each stage on its own cuda:0 backend exactly as the stage actors do: the same
// ops in the same order on each stage. So simulate on cuda:0 must equal lockstep on cuda:0 bit for
// bit, as it does on the CPU and on simulated devices.
TEST_CASE(
    "GPU: lockstep with every stage on cuda:0 follows the all-CPU run, and simulate on cuda:0 equals it") {
  PETRA_REQUIRE_GPU();
  const cpu_reference cpu = cpu_reference_run();
  const trained lockstep = train_once(gpu_config("lockstep", all_cuda0), micro_batches);
  check_follows(lockstep, cpu);
  for (const auto& s : lockstep.stages) CHECK(s["device_bytes"].get<int64_t>() > 0);
  const trained simulate = train_once(gpu_config("simulate", all_cuda0), micro_batches);
  CHECK(differing(simulate, lockstep) == 0);
  CHECK(simulate.totals.loss_sum == lockstep.totals.loss_sum);
}

TEST_CASE("GPU: mixed placement [cpu, cuda:0, cuda:0, cpu, ...] follows the all-CPU run") {
  PETRA_REQUIRE_GPU();
  const std::string mixed = "[cpu,cuda:0,cuda:0,cpu,cuda:0,cpu,cuda:0,cpu]";
  const cpu_reference cpu = cpu_reference_run();
  const trained lockstep = train_once(gpu_config("lockstep", mixed), micro_batches);
  check_follows(lockstep, cpu);
  const trained simulate = train_once(gpu_config("simulate", mixed), micro_batches);
  CHECK(differing(simulate, lockstep) == 0);
}

// Stage 2 on cuda:0 here hands its output to stage 3 on cuda:0 in the node process (device →
// pinned host → message → device), which hands it on to stage 4 on the node's CPU; the payloads
// cross the process boundary exactly, so the split run equals the one-process run bit for bit.
TEST_CASE("GPU: a cuda:0 stage next to stages in a petra node process") {
  PETRA_REQUIRE_GPU();
  node_process node;
  const std::string devices = "[cpu,cuda:0,cuda:0,cpu,cpu,cpu,cpu,cpu]";
  const std::string split =
      "[local,local," + node.address() + "," + node.address() + ",local,local,local,local]";
  const cpu_reference cpu = cpu_reference_run();
  const trained one_process = train_once(gpu_config("lockstep", devices, all_local), micro_batches);
  const trained two_processes = train_once(gpu_config("lockstep", devices, split), micro_batches);
  check_follows(two_processes, cpu);
  CHECK(differing(two_processes, one_process) == 0);
}

TEST_CASE("GPU: async on cuda:0 completes with bounded mailboxes and returns every device byte") {
  PETRA_REQUIRE_GPU();
  const config::run_config c = gpu_config("async", all_cuda0);
  training_data data = load_training_data(c);
  const int64_t per_epoch = data.train_feed->micro_batches_per_epoch();
  REQUIRE(per_epoch == micro_batches);
  auto runtime = make_actor_runtime(c, data, optimizer_for(c.training, per_epoch / c.training.accumulation));
  std::vector<int64_t> bytes_after_first;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    CAPTURE(epoch);
    const phase_result r = runtime->train(phase_request::of(epoch, 0, per_epoch), {});
    CHECK(r.completed == per_epoch);
    CHECK(std::isfinite(r.mean_loss()));
    REQUIRE(r.stages.size() == 8);
    // The phase is the epoch: each stage's counts are in the epoch's report (the phase's own
    // report starts afresh where the epoch ended).
    REQUIRE(r.epochs.size() == 1);
    REQUIRE(r.epochs[0].stages.size() == 8);
    for (std::size_t j = 0; j < r.stages.size(); ++j) {
      CAPTURE(j);
      CHECK(r.epochs[0].stages[j].stats.backwards == per_epoch);
      CHECK(r.epochs[0].stages[j].mailbox_peak <= 2 * 8 - 1);
      // A drained pipeline holds what it held after the first phase: no tensor leaks.
      if (epoch == 1)
        bytes_after_first.push_back(r.stages[j].device_bytes);
      else
        CHECK(r.stages[j].device_bytes == bytes_after_first[j]);
    }
  }
}

// Forward gradients on the GPU (training.method forward_gradient): the tangents' JVPs, the
// auxiliary heads and the projection run on cuda:0. With deterministic math simulate and lockstep
// run each stage's ops in the same order on the same data, so they agree bit for bit as on the
// CPU; and the run follows the all-CPU one within the CPU's own spread between thread counts, as
// PETRA's does. The random guess is drawn by each stage's backend from the same counters
// (backend::gaussian): on the GPU the CPU's values to a few ulps.
TEST_CASE(
    "GPU: forward gradients on cuda:0 (local and random guess) follow the all-CPU run, and simulate "
    "equals lockstep") {
  PETRA_REQUIRE_GPU();
  for (const char* guess : {"local", "random"}) {
    INFO("guess " << guess);
    const std::vector<std::string> fg = {"training.method=forward_gradient",
                                         std::string("training.forward_gradient.guess=") + guess};
    const cpu_reference cpu = cpu_reference_run(fg);
    const trained lockstep = train_once(gpu_config("lockstep", all_cuda0, "", "", fg), micro_batches);
    check_follows(lockstep, cpu);
    const trained simulate = train_once(gpu_config("simulate", all_cuda0, "", "", fg), micro_batches);
    CHECK(differing(simulate, lockstep) == 0);
    CHECK(simulate.totals.loss_sum == lockstep.totals.loss_sum);
  }
}

TEST_CASE(
    "GPU: overlap_rebuild on cuda:0 (rebuilds started ahead across stages) ends bit-identical to the plain "
    "order") {
  PETRA_REQUIRE_GPU();
  // The default preset, one block per stage: stage 3 (g1.b1) sends stage 2 (g1.b0) its rebuilt input
  // ahead of its gradients; stage 2 starts its rebuild on its second stream. Deterministic algorithms.
  const trained plain = train_once(gpu_config("lockstep", all_cuda0), micro_batches);
  const trained overlapped =
      train_once(gpu_config("lockstep", all_cuda0, "", "", {"runtime.overlap_rebuild=true"}), micro_batches);
  CHECK(differing(overlapped, plain) == 0);
  CHECK(overlapped.totals.loss_sum == plain.totals.loss_sum);
  REQUIRE(overlapped.stages.size() == 8);
  CAPTURE(overlapped.stages.dump());
  CHECK(overlapped.stages[1].value("rebuilds_ahead", int64_t{0}) == micro_batches);
  for (std::size_t j = 0; j < overlapped.stages.size(); ++j)
    if (j != 1) CHECK(overlapped.stages[j].value("rebuilds_ahead", int64_t{0}) == 0);
}

// Stage-local recovery on a GPU (docs/design.md §6): a crashed cuda:0 stage is rebuilt alone on a new
// cuda:0 backend (its own stream and handles), which its neighbours on cuda:0 and the CPU hand over
// to as before; stage 1 included, whose rebuild gets its count back from the loader's record. The
// tiny preset in async with snapshots at epoch ends, as the CPU and sim cases of
// tests/actors/async_recovery_test.cpp; the same accounting as a run without faults.
TEST_CASE(
    "GPU: a crashed cuda:0 stage in async (stage 1 or 2) is rebuilt alone on cuda:0, every micro-batch "
    "completed once") {
  PETRA_REQUIRE_GPU();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("petra-gpu-local-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const int stage : {1, 2}) {
    CAPTURE(stage);
    auto sets = base_sets(dir, "async", "petra");
    sets.push_back("data.path=" + fashion_mnist_dir());
    sets.push_back("pipeline.devices=[cuda:0,cuda:0,cuda:0,cpu]");
    sets.push_back("output.checkpoint_every_steps=0");
    sets.push_back("faults.stall_seconds=240");
    sets.push_back(stage == 1 ? "faults.crash_at_tick=[45,-1,-1,-1]" : "faults.crash_at_tick=[-1,45,-1,-1]");
    const std::string name = "stage" + std::to_string(stage);
    sets.push_back("output.name=" + name);
    petra::train_options run{"tiny", sets, "", 0};
    REQUIRE(app::train_command(run) == 0);
    const auto failures = event_lines(dir / name, "failure");
    REQUIRE(failures.size() == 1);
    MESSAGE("failure: " << failures[0].dump());
    CHECK(failures[0]["recovery"] == "local");
    CHECK(failures[0]["stages_rebuilt"] == nlohmann::json::array({stage}));
    CHECK(failures[0]["restored_from"] == "snapshot");
    const int64_t reissued = failures[0]["reissued_micro_batches"].get<int64_t>();
    CHECK(reissued >= 1);
    CHECK(reissued <= 7);  // at most the 2J − 1 credits were in flight
    CHECK(failures[0]["lost_micro_batches"] == 0);
    const nlohmann::json counted = event_lines(dir / name, "summary").at(0)["micro_batches"];
    CHECK(counted["completed"] == 64);
    CHECK(counted["lost"] == 0);
    CHECK(counted["reissued"] == reissued);
    CHECK(counted["local_recoveries"] == 1);
    CHECK(counted["restarts"] == 0);
    const auto epochs = event_lines(dir / name, "epoch");
    REQUIRE(epochs.size() == 2);
    CHECK(std::isfinite(epochs[1]["test_loss"].get<double>()));
  }
  fs::remove_all(dir);
}

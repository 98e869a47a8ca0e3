// Every op of the backend interface, on every backend present, against the CPU: sim bit for bit
// (the same kernels), a GPU within its fp32 and TF32 tolerances; a GPU case is skipped, saying
// why, where none is usable. The table must call every op the interface names.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "compute/backend_factory.hpp"
#include "compute/backend_op_names.hpp"
#include "compute/sim/sim_devices.hpp"
#include "tests/backends/check_backend.hpp"
#include "tests/backends/recording_backend.hpp"
#include "tests/skip.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("the op table calls every op of the backend interface, and only those") {
  recording_backend recorder;
  for (const op_case& c : op_table()) run_on(recorder, c);
  std::set<std::string> interface_ops;
  for (std::string_view op : backend_op_names) interface_ops.insert(std::string(op));
  CHECK(interface_ops.size() == std::size(backend_op_names));  // no name twice
  for (const std::string& op : interface_ops) {
    INFO("op " << op << " has no case in tests/backends' table: add one");
    CHECK(recorder.called.count(op) == 1);
  }
  for (const std::string& op : recorder.called) {
    INFO("op " << op << " is not in backend_op_names (compute/backend.hpp): add it there");
    CHECK(interface_ops.count(op) == 1);
  }
}

// Another CPU backend with as many threads gives the same bits: the determinism that makes
// lockstep ≡ simulate (the thread count may change a reduction's order: a convolution's dw).
TEST_CASE("cpu: every op on a second CPU backend equals the reference bit for bit, on one and two threads") {
  for (int threads : {1, 2}) {
    auto reference = make_cpu_backend(threads), cpu = make_cpu_backend(threads);
    CHECK(check_table(*cpu, *reference, measure::bitwise) > 0);
  }
}

TEST_CASE("sim:0: every op equals the CPU bit for bit, on one and on two threads") {
  for (int threads : {1, 2}) {
    backend_options options;
    options.threads = threads;
    options.sim = std::make_shared<sim_devices>();
    auto sim = make_backend(device{device_type::sim, 0}, options);
    auto reference = make_cpu_backend(threads);
    CHECK(check_table(*sim, *reference, measure::bitwise) > 0);
  }
}

namespace {

/// The table on cuda:0 (deterministic algorithms, in `precision`) against one fp32 CPU thread.
void check_gpu(math_precision precision) {
  backend_options options;
  options.precision = precision;
  options.deterministic = true;
  auto gpu = make_backend(device{device_type::cuda, 0}, options);
  auto reference = make_cpu_backend(1);
  const measure m = precision == math_precision::tf32            ? measure::gpu_tf32
                    : precision == math_precision::bf16          ? measure::gpu_bf16_tensor_cores
                    : precision == math_precision::bf16_emulated ? measure::gpu_bf16
                                                                 : measure::gpu_fp32;
  CHECK(check_table(*gpu, *reference, m) > 0);
}

}  // namespace

TEST_CASE("cuda:0, fp32 and deterministic: every op within the GPU tolerances of the CPU") {
  std::string why;
  if (!cuda_usable(&why)) PETRA_SKIP("no usable GPU: " + why);
  check_gpu(math_precision::fp32);
}

TEST_CASE("cuda:0 with TF32: convolutions and GEMMs within the TF32 tolerance of the CPU") {
  std::string why;
  if (!cuda_usable(&why)) PETRA_SKIP("no usable GPU: " + why);
  check_gpu(math_precision::tf32);
}

TEST_CASE(
    "cuda:0 in bf16 (tensor cores): convolutions and GEMMs within the tensor-core bf16 bound of the fp32 "
    "CPU") {
  std::string why;
  if (!cuda_usable(&why)) PETRA_SKIP("no usable GPU: " + why);
  check_gpu(math_precision::bf16);
}

TEST_CASE("cuda:0 in bf16_emulated: convolutions and GEMMs within the bf16 bound of the fp32 CPU") {
  std::string why;
  if (!cuda_usable(&why)) PETRA_SKIP("no usable GPU: " + why);
  check_gpu(math_precision::bf16_emulated);
}

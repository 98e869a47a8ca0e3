// Convolution algorithms tuned once per shape (compute/cuda/conv_algorithm_registry.hpp): timed
// choices compute what the CPU computes within the op table's bounds, a deterministic choice is
// the same for every backend of the process (the same bits), and a recorded table is repeated, or
// refused by name where its entry cannot run. The record's names and keys need no GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "compute/cuda/conv_algorithm_registry.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

struct conv_case {
  shape_t x, w;
  conv2d_params p;
};

// RevNet-18's kinds of convolution at micro-batch 32: a basic F's 3×3, a shortcut's 1×1 stride 2,
// the CIFAR stem, a narrower plane.
const std::vector<conv_case> revnet_convs = {{{32, 64, 32, 32}, {64, 64, 3, 3}, {1, 1}},
                                             {{32, 64, 32, 32}, {128, 64, 1, 1}, {2, 0}},
                                             {{32, 3, 32, 32}, {64, 3, 3, 3}, {1, 1}},
                                             {{32, 128, 16, 16}, {128, 128, 3, 3}, {1, 1}}};

struct conv_results {
  std::vector<tensor> host;  // y, dx, dw, db on the host
};

/// Forward with a bias, backward-data, backward-filter with db (accumulating onto non-zero
/// gradients) of `c` on `be`, from inputs drawn with `seed`.
conv_results run_conv(backend& be, const conv_case& c, unsigned seed) {
  std::mt19937 rng(seed);
  const tensor x = random_host(c.x, rng), w = random_host(c.w, rng), b = random_host({c.w[0]}, rng);
  const tensor y = be.conv2d_forward(be.from_host(x), be.from_host(w), be.from_host(b), c.p);
  const tensor dy = random_host(y.shape(), rng);
  const tensor dx = be.conv2d_backward_data(be.from_host(dy), be.from_host(w), c.x, c.p);
  tensor dw = be.from_host(random_host(c.w, rng)), db = be.from_host(random_host({c.w[0]}, rng));
  be.conv2d_backward_filter(be.from_host(x), be.from_host(dy), c.p, dw, db);
  return {{be.to_host(y), be.to_host(dx), be.to_host(dw), be.to_host(db)}};
}

/// The largest relative error of the four results of `gpu` against the CPU's.
double worst_error(const conv_results& gpu, const conv_results& cpu) {
  double worst = 0;
  for (std::size_t k = 0; k < gpu.host.size(); ++k)
    worst = std::max(worst, relative_error({gpu.host[k]}, {cpu.host[k]}));
  return worst;
}

bool same_bits(const conv_results& a, const conv_results& b) {
  for (std::size_t k = 0; k < a.host.size(); ++k)
    if (!bit_equal(a.host[k], b.host[k])) return false;
  return true;
}

/// The record of `c`'s direction `direction` among `choices` with that math mode and determinism.
const conv_algorithm_record* choice_of(const std::vector<conv_algorithm_record>& choices, const conv_case& c,
                                       const std::string& direction, const std::string& math_mode,
                                       bool deterministic) {
  for (const conv_algorithm_record& r : choices)
    if (r.direction == direction && r.math_mode == math_mode && r.deterministic == deterministic &&
        shape_t(r.x.begin(), r.x.end()) == c.x && shape_t(r.w.begin(), r.w.end()) == c.w &&
        r.stride == c.p.stride && r.padding == c.p.padding)
      return &r;
  return nullptr;
}

conv_algorithm_record entry_for(const conv_case& c, const std::string& direction, int algorithm,
                                bool deterministic) {
  conv_algorithm_record r;
  r.device = 0;
  r.direction = direction;
  std::copy(c.x.begin(), c.x.end(), r.x.begin());
  std::copy(c.w.begin(), c.w.end(), r.w.begin());
  r.stride = c.p.stride;
  r.padding = c.p.padding;
  r.data = "fp32";
  r.math_mode = "fp32";
  r.deterministic = deterministic;
  r.algorithm = algorithm;
  r.math = "fma";
  return r;
}

}  // namespace

TEST_CASE(
    "timed convolution algorithms (fp32 and TF32) compute what the CPU computes, within the op bounds") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  auto cpu = make_cpu_backend(1);
  for (math_precision precision : {math_precision::fp32, math_precision::tf32}) {
    auto gpu = make_cuda_backend(0, precision, /*deterministic=*/false, conv_search::timed);
    const double tolerance = precision == math_precision::tf32 ? tf32_tolerance : op_tolerance;
    for (std::size_t i = 0; i < revnet_convs.size(); ++i) {
      CAPTURE(to_string(precision));
      CAPTURE(i);
      const double error =
          worst_error(run_conv(*gpu, revnet_convs[i], 7 + i), run_conv(*cpu, revnet_convs[i], 7 + i));
      CHECK(error < tolerance);
    }
    // Every shape and direction was timed once, here or earlier in this process.
    const std::vector<conv_algorithm_record> choices =
        cuda_conv_algorithm_choices(conv_search::timed, nullptr);
    for (const conv_case& c : revnet_convs)
      for (const char* direction : conv_direction_names()) {
        const conv_algorithm_record* r = choice_of(choices, c, direction, to_string(precision), false);
        REQUIRE(r != nullptr);
        CHECK_MESSAGE(r->source == "timed", r->source);
        CHECK(r->time_ms >= 0);
        MESSAGE(r->key_str() << ": algorithm " << r->algorithm << " (" << r->math << "), " << r->time_ms
                             << " ms, " << r->workspace_bytes << " B of workspace");
      }
  }
}

TEST_CASE("deterministic timed choice: every backend of the process takes it, the same bits each time") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  // Two backends as two stages (or simulate beside lockstep) would have them: the second takes the
  // first's choices, whatever its own timing would have said.
  auto first = make_cuda_backend(0, math_precision::fp32, /*deterministic=*/true, conv_search::timed);
  auto second = make_cuda_backend(0, math_precision::fp32, /*deterministic=*/true, conv_search::timed);
  for (std::size_t i = 0; i < revnet_convs.size(); ++i) {
    CAPTURE(i);
    const conv_results a = run_conv(*first, revnet_convs[i], 21 + i);
    CHECK(same_bits(a, run_conv(*second, revnet_convs[i], 21 + i)));
    CHECK(same_bits(a, run_conv(*first, revnet_convs[i], 21 + i)));
  }
  const std::vector<conv_algorithm_record> choices = cuda_conv_algorithm_choices(conv_search::timed, nullptr);
  for (const conv_case& c : revnet_convs) {
    const conv_algorithm_record* data = choice_of(choices, c, "backward_data", "fp32", true);
    const conv_algorithm_record* filter = choice_of(choices, c, "backward_filter", "fp32", true);
    REQUIRE(data != nullptr);
    REQUIRE(filter != nullptr);
    // cuDNN's documented non-deterministic ones (atomics): backward-data ALGO_0, backward-filter
    // ALGO_0 and ALGO_3.
    CHECK(data->algorithm != 0);
    CHECK(filter->algorithm != 0);
    CHECK(filter->algorithm != 3);
  }
}

TEST_CASE("a recorded table is repeated: its entries are taken before any search") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  const conv_case& c = revnet_convs[0];
  auto table = std::make_shared<conv_algorithm_table>();
  table->path = "recorded by tests/cuda/tuned_algorithms_test.cpp";
  // Transform-free algorithms every GPU runs in FMA math: implicit GEMM forward, ALGO_1 backwards.
  table->entries = {entry_for(c, "forward", 0, false), entry_for(c, "backward_data", 1, false),
                    entry_for(c, "backward_filter", 1, false)};
  auto gpu = make_cuda_backend(0, math_precision::fp32, /*deterministic=*/false, conv_search::timed, table);
  auto cpu = make_cpu_backend(1);
  CHECK(worst_error(run_conv(*gpu, c, 5), run_conv(*cpu, c, 5)) < op_tolerance);
  const conv_case& other = revnet_convs[1];  // not in the table: timed
  CHECK(worst_error(run_conv(*gpu, other, 6), run_conv(*cpu, other, 6)) < op_tolerance);
  const std::vector<conv_algorithm_record> choices =
      cuda_conv_algorithm_choices(conv_search::timed, table.get());
  for (const conv_algorithm_record& e : table->entries) {
    const conv_algorithm_record* r = choice_of(choices, c, e.direction, "fp32", false);
    REQUIRE(r != nullptr);
    CHECK(r->source == "recorded");
    CHECK(r->algorithm == e.algorithm);
    CHECK(r->math == "fma");
  }
  const conv_algorithm_record* timed = choice_of(choices, other, "forward", "fp32", false);
  REQUIRE(timed != nullptr);
  CHECK(timed->source == "timed");
}

TEST_CASE("a recorded entry that cannot be used here is refused, naming the file and why") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  const conv_case& c = revnet_convs[0];
  auto table = std::make_shared<conv_algorithm_table>();
  table->path = "runs/elsewhere/cudnn_algorithms.json";
  // Backward-filter ALGO_0 sums with atomics: not for a deterministic backend.
  table->entries = {entry_for(c, "backward_filter", 0, true)};
  auto gpu =
      make_cuda_backend(0, math_precision::fp32, /*deterministic=*/true, conv_search::heuristic, table);
  std::mt19937 rng(2);
  const tensor x = gpu->from_host(random_host(c.x, rng)),
               dy = gpu->from_host(random_host({32, 64, 32, 32}, rng));
  tensor dw = gpu->zeros(c.w), db;
  CHECK_THROWS_WITH_AS(
      gpu->conv2d_backward_filter(x, dy, c.p, dw, db),
      doctest::Contains("runtime.cudnn_algorithms: 'runs/elsewhere/cudnn_algorithms.json': the "
                        "entry for cuda:0 backward_filter"),
      std::runtime_error);
  CHECK_THROWS_WITH_AS(gpu->conv2d_backward_filter(x, dy, c.p, dw, db),
                       doctest::Contains("cannot be used here"), std::runtime_error);
}

TEST_CASE("the record's math names and keys (no GPU needed)") {
  for (cudnnMathType_t m :
       {CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH}) {
    cudnnMathType_t back = CUDNN_DEFAULT_MATH;
    CHECK(cuda::parse_math_name(cuda::math_name(m), back));
    CHECK(back == m);
  }
  cudnnMathType_t unused;
  CHECK_FALSE(cuda::parse_math_name("tf32", unused));
  cuda::conv_geometry g;
  g.n = 128, g.c = 64, g.h = 32, g.w = 32, g.k = 128, g.r = 1, g.s = 1, g.stride = 2, g.padding = 0;
  const cuda::conv_plan plan(g, CUDNN_DATA_BFLOAT16);
  cuda::conv_policy policy;
  policy.bf16 = true;
  policy.deterministic = true;
  const conv_algorithm_record r = cuda::record_key(1, cuda::conv_direction::backward_filter, plan, policy);
  CHECK(
      r.key_str() ==
      "cuda:1 backward_filter x (128, 64, 32, 32) w (128, 64, 1, 1) stride 2 padding 0 bf16 data, bf16 math, "
      "deterministic");
  cuda::conv_policy tf32;
  tf32.tf32 = true;
  const conv_algorithm_record t =
      cuda::record_key(0, cuda::conv_direction::forward, cuda::conv_plan(g), tf32);
  CHECK(t.data == "fp32");
  CHECK(t.math_mode == "tf32");
  CHECK_FALSE(t.deterministic);
  CHECK_FALSE(t.same_key(r));
}

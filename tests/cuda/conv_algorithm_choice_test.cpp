// How a convolution's algorithm is picked from cuDNN's heuristic results, and the bf16 plan's
// descriptors: both need no GPU, so they run on every machine.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "compute/cuda/dnn_descriptors.hpp"

using namespace petra;
using namespace petra::cuda;

namespace {

conv_geometry revnet_basic_f() {
  conv_geometry g;
  g.n = 128, g.c = 64, g.h = 32, g.w = 32, g.k = 64, g.r = 3, g.s = 3, g.stride = 1, g.padding = 1;
  return g;
}

algorithm_candidate candidate(int algo, cudnnMathType_t math,
                              cudnnDeterminism_t determinism = CUDNN_DETERMINISTIC) {
  algorithm_candidate c;
  c.algo = algo, c.math = math, c.determinism = determinism, c.memory = 1 << 20;
  return c;
}

conv_policy bf16_policy(bool deterministic) {
  conv_policy p;
  p.bf16 = true;
  p.deterministic = deterministic;
  return p;
}

}  // namespace

TEST_CASE("a bf16 plan describes x, w and y in bf16 (the bf16 configuration of cuDNN), the bias in fp32") {
  const conv_geometry g = revnet_basic_f();
  const conv_plan plan(g, CUDNN_DATA_BFLOAT16);
  CHECK(plan.data_type == CUDNN_DATA_BFLOAT16);
  CHECK(plan.x.data_type() == CUDNN_DATA_BFLOAT16);
  CHECK(plan.y.data_type() == CUDNN_DATA_BFLOAT16);
  CHECK(plan.w.data_type() == CUDNN_DATA_BFLOAT16);
  CHECK(plan.bias.data_type() == CUDNN_DATA_FLOAT);
  CHECK(plan.cudnn_output_shape() == g.y_shape());
  const conv_plan fp32(g);
  CHECK(fp32.x.data_type() == CUDNN_DATA_FLOAT);
  CHECK(fp32.w.data_type() == CUDNN_DATA_FLOAT);
  dnn_cache bf16_cache(CUDNN_DATA_BFLOAT16), fp32_cache;
  CHECK(bf16_cache.conv(g).data_type == CUDNN_DATA_BFLOAT16);
  CHECK(fp32_cache.conv(g).data_type == CUDNN_DATA_FLOAT);
}

TEST_CASE("bf16 picks the first candidate that forms its products directly, with its own math type") {
  const conv_geometry g = revnet_basic_f();
  // Winograd and FFT transform the operands (rounded to bf16 again): passed over.
  const std::vector<algorithm_candidate> forward = {
      candidate(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, CUDNN_TENSOR_OP_MATH),
      candidate(CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, CUDNN_TENSOR_OP_MATH),
      candidate(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_TENSOR_OP_MATH)};
  const conv_algorithm a = pick_algorithm(conv_direction::forward, forward, bf16_policy(true), g);
  CHECK(a.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  CHECK(a.math == CUDNN_TENSOR_OP_MATH);
  CHECK(math_for(bf16_policy(true), a.math) == CUDNN_TENSOR_OP_MATH);
  // Deterministic: backward-filter ALGO_0 and ALGO_3 sum with atomics.
  const std::vector<algorithm_candidate> filter = {
      candidate(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_TENSOR_OP_MATH, CUDNN_NON_DETERMINISTIC),
      candidate(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_TENSOR_OP_MATH)};
  CHECK(pick_algorithm(conv_direction::backward_filter, filter, bf16_policy(true), g).algo ==
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  CHECK(pick_algorithm(conv_direction::backward_filter, filter, bf16_policy(false), g).algo ==
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
  // A candidate that did not run, or needs more workspace than allowed, is not taken.
  algorithm_candidate failed = candidate(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_TENSOR_OP_MATH);
  failed.status = CUDNN_STATUS_NOT_SUPPORTED;
  algorithm_candidate big = candidate(CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_TENSOR_OP_MATH);
  big.memory = std::size_t{1} << 40;
  const algorithm_candidate fma = candidate(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_DEFAULT_MATH);
  const conv_algorithm d =
      pick_algorithm(conv_direction::backward_data, {failed, big, fma}, bf16_policy(true), g);
  CHECK(d.algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
  CHECK(d.math == CUDNN_DEFAULT_MATH);
}

TEST_CASE("no bf16 algorithm: the error names the direction, the shape, bf16 and every refusal") {
  const conv_geometry g = revnet_basic_f();
  algorithm_candidate failed = candidate(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_TENSOR_OP_MATH);
  failed.status = CUDNN_STATUS_NOT_SUPPORTED;
  const std::vector<algorithm_candidate> forward = {
      failed, candidate(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_TENSOR_OP_MATH),
      candidate(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_TENSOR_OP_MATH,
                CUDNN_NON_DETERMINISTIC)};
  const auto pick = [&] { pick_algorithm(conv_direction::forward, forward, bf16_policy(true), g); };
  CHECK_THROWS_WITH_AS(pick(), doctest::Contains("no forward convolution algorithm"), std::runtime_error);
  CHECK_THROWS_WITH_AS(pick(), doctest::Contains(g.str().c_str()), std::runtime_error);
  CHECK_THROWS_WITH_AS(pick(), doctest::Contains("in bf16 tensors"), std::runtime_error);
  CHECK_THROWS_WITH_AS(pick(), doctest::Contains("that is deterministic"), std::runtime_error);
  CHECK_THROWS_WITH_AS(pick(), doctest::Contains("algo 0: CUDNN_STATUS_NOT_SUPPORTED"), std::runtime_error);
  CHECK_THROWS_WITH_AS(pick(), doctest::Contains("algo 6: Winograd or FFT transform"), std::runtime_error);
  CHECK_THROWS_WITH_AS(pick(), doctest::Contains("algo 1: not deterministic"), std::runtime_error);
  CHECK_THROWS_WITH_AS(pick(), doctest::Contains("runtime.precision: bf16_emulated"), std::runtime_error);
  CHECK_THROWS_WITH_AS(pick_algorithm(conv_direction::backward_filter, {}, bf16_policy(false), g),
                       doctest::Contains("0 candidates: none"), std::runtime_error);
}

TEST_CASE("fp32 keeps its rule: a TF32 candidate only when nothing else qualifies, run in FMA math") {
  const conv_geometry g = revnet_basic_f();
  conv_policy fp32;
  fp32.deterministic = true;
  const std::vector<algorithm_candidate> tf32_first = {
      candidate(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_TENSOR_OP_MATH),
      candidate(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_FMA_MATH)};
  CHECK(pick_algorithm(conv_direction::forward, tf32_first, fp32, g).algo ==
        CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD);
  const conv_algorithm only_tf32 = pick_algorithm(conv_direction::forward, {tf32_first[0]}, fp32, g);
  CHECK(only_tf32.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  CHECK(math_for(fp32, only_tf32.math) == CUDNN_FMA_MATH);
  CHECK_THROWS_WITH_AS(pick_algorithm(conv_direction::forward, {}, fp32, g),
                       doctest::Contains("turn deterministic algorithms off"), std::runtime_error);
}

// PaReprop's overlapped backward on a GPU: the rebuild on a second stream of the device, with
// events between the streams, gives the plain order's bits (deterministic algorithms), in fp32 and
// in bf16 on tensor cores.
#include <doctest/doctest.h>

#include "compute/cuda/cuda_backend.hpp"
#include "tests/compute/overlap_fixture.hpp"
#include "tests/skip.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("overlapped backward, GPU: 3 couplings on two streams, bit for bit the plain order") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  for (math_precision precision : {math_precision::fp32, math_precision::bf16}) {
    INFO(to_string(precision));
    auto plain_be = make_cuda_backend(0, precision, /*deterministic=*/true);
    const backward_bits plain = run_coupling_stage(*plain_be, nullptr, 3, 8, 4, 8);
    auto be = make_cuda_backend(0, precision, true);
    check_same_bits(plain, run_coupling_stage(*be, make_cuda_backend(0, precision, true), 3, 8, 4, 8));
  }
}

TEST_CASE(
    "rebuild started ahead, GPU: the last block's rebuild on the second stream before its backward, bit for "
    "bit") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  auto plain_be = make_cuda_backend(0, math_precision::fp32, /*deterministic=*/true);
  const pipelined_bits plain = run_pipelined(*plain_be, nullptr, ahead_mode::none);
  for (ahead_mode mode : {ahead_mode::ahead, ahead_mode::from_copy, ahead_mode::weights_read}) {
    CAPTURE(static_cast<int>(mode));
    auto be = make_cuda_backend(0, math_precision::fp32, true);
    const pipelined_bits run = run_pipelined(*be, make_cuda_backend(0, math_precision::fp32, true), mode);
    check_same_bits(plain, run);
    CHECK(run.ready_calls == 5);
    CHECK(run.taken == (mode == ahead_mode::ahead ? 5 : 0));
  }
}

// PaReprop's overlapped backward on a GPU: the rebuild on a second stream of the device, with
// events between the streams, gives the plain order's bits (deterministic algorithms).
#include <doctest/doctest.h>

#include "compute/cuda/cuda_backend.hpp"
#include "tests/compute/overlap_fixture.hpp"
#include "tests/skip.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("overlapped backward, GPU: 3 couplings on two streams, bit for bit the plain order") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  auto plain_be = make_cuda_backend(0, math_precision::fp32, /*deterministic=*/true);
  const backward_bits plain = run_coupling_stage(*plain_be, nullptr, 3, 8, 4, 8);
  auto be = make_cuda_backend(0, math_precision::fp32, true);
  check_same_bits(plain,
                  run_coupling_stage(*be, make_cuda_backend(0, math_precision::fp32, true), 3, 8, 4, 8));
}

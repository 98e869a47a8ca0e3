// The fp32 CPU backend runs 3×3 stride-1 convolutions of widths in blocks of 16 channels, at least
// 32, as Winograd F(4×4, 3×3), oneDNN's on AVX-512 and petra's own elsewhere (the rest direct): which kernel
// runs which geometry, results within fp32 round-off of the direct-loop reference at the RevNet's widths and
// planes, and the forward and backward-data bits independent of the thread count (a rebuild lane may run the
// forward on fewer threads than its stage: the stage's bits).
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "compute/backend.hpp"
#include "compute/cpu/bf16_support.hpp"
#include "compute/cpu/conv2d_engine.hpp"
#include "tests/ops/op_test_helpers.hpp"
#include "tests/ops/reference_conv.hpp"

using namespace petra;
using namespace petra::test;

namespace {

struct plane_case {
  int64_t n, c, h, k;
};

bool same_bits(const tensor& a, const tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.data()[i] != b.data()[i]) return false;
  return true;
}

}  // namespace

TEST_CASE("Winograd runs the 3×3 stride-1 convolutions of 32 channels or more, direct kernels the rest") {
  auto geometry = [](int64_t c, int64_t k, int64_t r, int64_t stride) {
    conv2d_geometry g;
    g.n = 2, g.c = c, g.h = 14, g.w = 14, g.k = k, g.r = r, g.s = r, g.stride = stride, g.padding = r / 2;
    return g;
  };
  CHECK(winograd_pays(geometry(32, 32, 3, 1)));
  CHECK(winograd_pays(geometry(64, 128, 3, 1)));
  CHECK_FALSE(winograd_pays(geometry(16, 16, 3, 1)));  // the default preset's first group: direct is faster
  CHECK_FALSE(winograd_pays(geometry(16, 32, 3, 1)));
  CHECK_FALSE(winograd_pays(geometry(48, 40, 3, 1)));  // not whole blocks of 16
  CHECK_FALSE(winograd_pays(geometry(32, 32, 3, 2)));
  CHECK_FALSE(winograd_pays(geometry(32, 32, 1, 1)));
  // What runs: oneDNN's Winograd kernels ("jit_wino_4x3:…") need AVX-512 (avx512_core: F, BW, VL,
  // DQ); on a CPU without it petra's own Winograd ("petra_wino_4x3") runs from 64 channels and
  // direct kernels below.
  const std::string flags = cpu_flags();
  bool avx512_core = true;
  for (const char* flag : {"avx512f", "avx512bw", "avx512vl", "avx512dq"})
    avx512_core = avx512_core && has_cpu_flag(flags, flag);
  conv2d_engine fp32(2, false, true), off(2, false, false);
  const std::string kernel = fp32.forward_kernel(geometry(32, 32, 3, 1));
  CAPTURE(kernel);
  if (avx512_core) {
    CHECK(kernel.find("jit_wino") != std::string::npos);
  } else {
    MESSAGE("no AVX-512 on this CPU: oneDNN has no Winograd kernel, petra's own runs from 64 channels");
    CHECK(kernel.find("wino") == std::string::npos);
    CHECK(fp32.forward_kernel(geometry(64, 64, 3, 1)) == "petra_wino_4x3");
    CHECK(fp32.forward_kernel(geometry(64, 128, 3, 1)) == "petra_wino_4x3");
  }
  CHECK(off.forward_kernel(geometry(64, 64, 3, 1)).find("wino") == std::string::npos);
  CHECK(fp32.forward_kernel(geometry(32, 32, 3, 2)).find("wino") == std::string::npos);
  CHECK(fp32.forward_kernel(geometry(16, 16, 3, 1)).find("wino") == std::string::npos);
  CHECK(off.forward_kernel(geometry(32, 32, 3, 1)).find("wino") == std::string::npos);
  if (missing_bf16_instructions(cpu_flags()).empty()) {  // bf16 operands: never Winograd
    conv2d_engine bf16(2, true, true);
    CHECK(bf16.forward_kernel(geometry(32, 32, 3, 1)).find("wino") == std::string::npos);
  }
}

TEST_CASE("3×3 stride-1 convolutions (Winograd in fp32) match the direct-loop reference at RevNet sizes") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(17);
  // Planes of 28, 14, 7 (the default preset), 8 and 4 (RevNet-18's last groups); tiles of 4×4 do
  // not divide 7 or 14: the partial tiles are covered.
  const plane_case cases[] = {{4, 16, 28, 16}, {4, 32, 14, 32}, {4, 64, 7, 64},
                              {2, 64, 8, 64},  {2, 32, 4, 48},  {2, 16, 4, 32}};
  const conv2d_params p{1, 1};
  for (const plane_case& g : cases) {
    CAPTURE(std::to_string(g.n) + "x" + std::to_string(g.c) + "x" + std::to_string(g.h) + " -> " +
            std::to_string(g.k));
    const tensor x = random_tensor({g.n, g.c, g.h, g.h}, rng);
    const tensor w = random_tensor({g.k, g.c, 3, 3}, rng);
    const tensor b = random_tensor({g.k}, rng);
    const tensor y = cpu->conv2d_forward(x, w, b, p);
    CHECK(scaled_error(y, reference_conv2d_forward(x, w, b, p)) < 1e-5);
    const tensor dy = random_tensor(y.shape(), rng);
    CHECK(scaled_error(cpu->conv2d_backward_data(dy, w, x.shape(), p),
                       reference_conv2d_backward_data(dy, w, x.shape(), p)) < 1e-5);
    tensor dw = tensor::zeros(w.shape()), db = tensor::zeros({g.k});
    cpu->conv2d_backward_filter(x, dy, p, dw, db);
    CHECK(scaled_error(dw, reference_conv2d_backward_filter(x, dy, 3, 3, p)) < 1e-5);
    CHECK(scaled_error(db, reference_conv2d_backward_bias(dy)) < 1e-5);
  }
}

TEST_CASE("3×3 stride-1 convolutions give the same bits on one and on two threads") {
  auto one = make_cpu_backend(1);
  auto two = make_cpu_backend(2);
  std::mt19937 rng(19);
  const conv2d_params p{1, 1};
  for (const plane_case& g :
       {plane_case{8, 16, 14, 16}, plane_case{4, 32, 7, 32}, plane_case{2, 64, 9, 64}}) {
    CAPTURE(g.c);
    const tensor x = random_tensor({g.n, g.c, g.h, g.h}, rng), w = random_tensor({g.k, g.c, 3, 3}, rng);
    const tensor b = random_tensor({g.k}, rng), dy = random_tensor({g.n, g.k, g.h, g.h}, rng);
    CHECK(same_bits(one->conv2d_forward(x, w, b, p), two->conv2d_forward(x, w, b, p)));
    CHECK(same_bits(one->conv2d_backward_data(dy, w, x.shape(), p),
                    two->conv2d_backward_data(dy, w, x.shape(), p)));
  }
}

// bf16 (runtime.precision: bf16 | bf16_emulated) on every backend: the op table's bf16 column
// against the fp32 CPU, sim ≡ CPU in bf16 bit for bit, the rounding itself, and the refusal on a
// CPU without bf16 instructions.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "compute/backend_factory.hpp"
#include "compute/cpu/bf16_support.hpp"
#include "compute/sim/sim_devices.hpp"
#include "tests/backends/check_backend.hpp"
#include "tests/backends/forced_cpu_flags.hpp"
#include "tests/backends/parity_measures.hpp"
#include "tests/skip.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// Why this CPU cannot run native bf16 ("" when it can).
std::string no_native_bf16() { return missing_bf16_instructions(cpu_flags()); }

std::unique_ptr<backend> sim_backend_with(math_precision precision, int threads) {
  backend_options options;
  options.threads = threads;
  options.precision = precision;
  options.sim = std::make_shared<sim_devices>();
  return make_backend(device{device_type::sim, 0}, options);
}

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

TEST_CASE("cpu in bf16: convolutions and GEMMs within the bf16 bound of fp32, every other op bit for bit") {
  const std::string why = no_native_bf16();
  if (!why.empty()) PETRA_SKIP(why);
  for (int threads : {1, 2}) {
    auto bf16 = make_cpu_backend(threads, math_precision::bf16), reference = make_cpu_backend(threads);
    CHECK(check_table(*bf16, *reference, measure::bf16) > 0);
  }
}

TEST_CASE("cpu in bf16_emulated: the same bound against fp32, on any CPU") {
  for (int threads : {1, 2}) {
    auto emulated = make_cpu_backend(threads, math_precision::bf16_emulated);
    auto reference = make_cpu_backend(threads);
    CHECK(check_table(*emulated, *reference, measure::bf16) > 0);
  }
}

TEST_CASE("sim:0 in bf16 and bf16_emulated equals the CPU in the same precision bit for bit") {
  std::vector<math_precision> precisions = {math_precision::bf16_emulated};
  if (no_native_bf16().empty()) precisions.push_back(math_precision::bf16);
  for (math_precision precision : precisions)
    for (int threads : {1, 2}) {
      INFO(to_string(precision) << ", " << threads << " threads");
      auto sim = sim_backend_with(precision, threads);
      auto reference = make_cpu_backend(threads, precision);
      CHECK(check_table(*sim, *reference, measure::bitwise) > 0);
    }
}

// x·1 is bf16(x) exactly, so a 1×1 linear and a 1×1 convolution with weight 1 show the rounding:
// to nearest, ties to even, as oneDNN's reorders and our own rounding both must.
TEST_CASE("bf16 operands are rounded to nearest, ties to even, by linear and by the convolutions") {
  const float ulp_at_one = 1.f / 128;  // bf16 keeps 7 bits after the leading one
  const std::vector<std::pair<float, float>> cases = {
      {1.f + ulp_at_one / 2, 1.f},                               // a tie: to the even 1
      {1.f + 1.5f * ulp_at_one, 1.f + 2 * ulp_at_one},           // a tie: to the even 1 + 2 ulp
      {1.f + ulp_at_one / 2 + 1.f / 1048576, 1.f + ulp_at_one},  // above the tie: up
      {-(1.f + ulp_at_one / 2), -1.f},                           // the sign apart, the same
      {3.f, 3.f},                                                // already a bf16
      {bits_to_float(0x3f80ffffu), 1.f + ulp_at_one},            // 1.0078124 up
  };
  std::vector<math_precision> precisions = {math_precision::bf16_emulated};
  if (no_native_bf16().empty()) precisions.push_back(math_precision::bf16);
  for (math_precision precision : precisions) {
    auto be = make_cpu_backend(1, precision);
    tensor x = tensor::empty({static_cast<int64_t>(cases.size()), 1});
    for (std::size_t i = 0; i < cases.size(); ++i) x.data()[i] = cases[i].first;
    tensor one = tensor::empty({1, 1});
    one.data()[0] = 1.f;
    const tensor y = be->linear_forward(x, one, tensor{});
    const tensor x_planes = x.reshaped({static_cast<int64_t>(cases.size()), 1, 1, 1});
    const tensor y_conv = be->conv2d_forward(x_planes, one.reshaped({1, 1, 1, 1}), tensor{}, {1, 0});
    for (std::size_t i = 0; i < cases.size(); ++i) {
      INFO(to_string(precision) << ": " << cases[i].first);
      CHECK(y.data()[i] == cases[i].second);
      CHECK(y_conv.data()[i] == cases[i].second);
    }
  }
  // Beyond the largest bf16 (and the half ulp above it) lies ∞; ∞ and NaN stay (linear only: our
  // rounding; a convolution of ∞ would mix in 0·∞).
  auto be = make_cpu_backend(1, math_precision::bf16_emulated);
  tensor x = tensor::empty({3, 1});
  x.data()[0] = FLT_MAX, x.data()[1] = -INFINITY, x.data()[2] = NAN;
  tensor one = tensor::empty({1, 1});
  one.data()[0] = 1.f;
  const tensor y = be->linear_forward(x, one, tensor{});
  CHECK(y.data()[0] == INFINITY);
  CHECK(y.data()[1] == -INFINITY);
  CHECK(std::isnan(y.data()[2]));
}

TEST_CASE("bf16 is refused on a CPU without AVX512-BF16 and AMX, naming the key and the flags") {
  CHECK(missing_bf16_instructions("fpu sse2 avx2 avx512f avx512bw").find("avx512_bf16") != std::string::npos);
  CHECK(missing_bf16_instructions("fpu sse2 avx2 avx512f avx512bw").find("amx_bf16") != std::string::npos);
  CHECK(missing_bf16_instructions("").find("neither AVX512-BF16 nor AMX-BF16") != std::string::npos);
  CHECK(missing_bf16_instructions("fpu avx512_bf16 avx2").empty());
  CHECK(missing_bf16_instructions(" amx_tile amx_bf16").empty());
  CHECK_FALSE(missing_bf16_instructions("avx512_bf16x").empty());  // whole flags only

  const forced_cpu_flags no_flags("");
  backend_options options;
  options.precision = math_precision::bf16;
  for (const char* where : {"cpu", "sim:0"}) {
    INFO(where);
    options.sim = std::make_shared<sim_devices>();
    CHECK_THROWS_WITH_AS(make_backend(device::parse(where), options),
                         doctest::Contains("runtime.precision: bf16 needs bf16 instructions"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(make_backend(device::parse(where), options), doctest::Contains("avx512_bf16"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(make_backend(device::parse(where), options), doctest::Contains("bf16_emulated"),
                         std::invalid_argument);
  }
  options.precision = math_precision::bf16_emulated;  // what the message offers runs anywhere
  CHECK(make_backend(device{}, options)->name().find("bf16_emulated") != std::string::npos);
}

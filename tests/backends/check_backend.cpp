// The table's runner: upload, run, download, compare.
#include "tests/backends/check_backend.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "tests/backends/parity_measures.hpp"

namespace petra::testing {

namespace {

parity parity_of(const op_case& c, std::size_t k) {
  REQUIRE((c.parities.size() == 1 || k < c.parities.size()));
  return c.parities.size() == 1 ? c.parities[0] : c.parities[k];
}

bf16_rule bf16_rule_of(const op_case& c, std::size_t k) {
  if (c.bf16.empty()) return bf16_rule::same;
  REQUIRE((c.bf16.size() == 1 || k < c.bf16.size()));
  return c.bf16.size() == 1 ? c.bf16[0] : c.bf16[k];
}

bool has_bf16_products(const op_case& c) {
  return std::find(c.bf16.begin(), c.bf16.end(), bf16_rule::products) != c.bf16.end();
}

bool bf16_measure(measure m) {
  return m == measure::bf16 || m == measure::gpu_bf16 || m == measure::gpu_bf16_tensor_cores;
}

/// `c` on the absolute values of its inputs: in fp32, each result's Σ|aᵢbᵢ| (the bf16 bound's scale).
op_case on_magnitudes(const op_case& c) {
  op_case magnitudes = c;
  for (tensor& t : magnitudes.inputs) {
    if (!t.defined()) continue;
    t = t.clone();
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = std::fabs(t.data()[i]);
  }
  return magnitudes;
}

/// A bf16 result built from rounded operands: within the bound, and not the fp32 bits (the
/// rounding took place).
void check_bf16_products(const tensor& got, const tensor& expected, const tensor& magnitude, measure m) {
  REQUIRE(got.defined() == expected.defined());
  if (!got.defined()) return;
  // Computed before INFO: its REQUIREs must not run inside the reporter's logging.
  const double ratio = bf16_bound_ratio(
      got, expected, magnitude,
      m == measure::gpu_bf16_tensor_cores ? bf16_tensor_core_bound_factor : bf16_bound_factor);
  const double norm_wise = relative_error({got}, {expected});
  INFO("largest error / bf16 bound " << ratio << ", norm-wise relative error " << norm_wise);
  CHECK(ratio <= 1.0);
  CHECK_FALSE(bit_equal(got, expected));
}

bool has_tf32_result(const op_case& c) {
  return std::find(c.parities.begin(), c.parities.end(), parity::tf32) != c.parities.end();
}

void check_tensor(const tensor& got, const tensor& expected, parity p, measure m) {
  if (m == measure::bitwise || m == measure::bf16 || p == parity::exact || !expected.defined() ||
      !got.defined()) {
    CHECK(bit_equal(got, expected));
    return;
  }
  const double tolerance = m == measure::gpu_tf32 && p == parity::tf32 ? tf32_tolerance : op_tolerance;
  const double error = relative_error({got}, {expected});
  INFO("relative error " << error << ", tolerance " << tolerance);
  CHECK(error < tolerance);
}

}  // namespace

op_result run_on(backend& be, const op_case& c) {
  std::vector<tensor> inputs;
  for (const tensor& t : c.inputs) inputs.push_back(t.defined() ? be.from_host(t) : tensor{});
  op_result result = c.run(be, inputs);
  for (tensor& t : result.tensors) {
    if (!t.defined()) continue;
    REQUIRE(t.where() == be.where());  // an op's result is of the backend's device
    t = be.to_host(t);
  }
  for (const tensor& t : result.host_tensors) REQUIRE((!t.defined() || t.where().type == device_type::cpu));
  return result;
}

int check_table(backend& be, backend& reference, measure m) {
  int ran = 0;
  for (const op_case& c : op_table()) {
    if (m == measure::gpu_tf32 && !has_tf32_result(c)) continue;
    INFO(be.name() << " against " << reference.name() << ": " << c.name);
    const op_result expected = run_on(reference, c), got = run_on(be, c);
    const op_result magnitude =
        bf16_measure(m) && has_bf16_products(c) ? run_on(reference, on_magnitudes(c)) : op_result{};
    REQUIRE(got.tensors.size() == expected.tensors.size());
    REQUIRE(got.scalars.size() == expected.scalars.size());
    REQUIRE(got.host_tensors.size() == expected.host_tensors.size());
    for (std::size_t k = 0; k < got.host_tensors.size(); ++k) {
      INFO("host result " << k);
      CHECK(bit_equal(got.host_tensors[k], expected.host_tensors[k]));
    }
    for (std::size_t k = 0; k < got.tensors.size(); ++k) {
      INFO("result " << k);
      if (bf16_measure(m) && bf16_rule_of(c, k) == bf16_rule::products)
        check_bf16_products(got.tensors[k], expected.tensors[k], magnitude.tensors.at(k), m);
      else
        check_tensor(got.tensors[k], expected.tensors[k], parity_of(c, k), m);
    }
    for (std::size_t k = 0; k < got.scalars.size(); ++k) {
      INFO("scalar " << k);
      if (m == measure::bitwise || m == measure::bf16)
        CHECK(got.scalars[k] == expected.scalars[k]);
      else
        CHECK(got.scalars[k] == doctest::Approx(expected.scalars[k]).epsilon(1e-6));
    }
    ++ran;
  }
  return ran;
}

}  // namespace petra::testing

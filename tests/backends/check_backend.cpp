// The table's runner: upload, run, download, compare.
#include "tests/backends/check_backend.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "tests/backends/parity_measures.hpp"

namespace petra::testing {

namespace {

parity parity_of(const op_case& c, std::size_t k) {
  REQUIRE((c.parities.size() == 1 || k < c.parities.size()));
  return c.parities.size() == 1 ? c.parities[0] : c.parities[k];
}

bool has_tf32_result(const op_case& c) {
  return std::find(c.parities.begin(), c.parities.end(), parity::tf32) != c.parities.end();
}

void check_tensor(const tensor& got, const tensor& expected, parity p, measure m) {
  if (m == measure::bitwise || p == parity::exact || !expected.defined() || !got.defined()) {
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
    REQUIRE(got.tensors.size() == expected.tensors.size());
    REQUIRE(got.scalars.size() == expected.scalars.size());
    REQUIRE(got.host_tensors.size() == expected.host_tensors.size());
    for (std::size_t k = 0; k < got.host_tensors.size(); ++k) {
      INFO("host result " << k);
      CHECK(bit_equal(got.host_tensors[k], expected.host_tensors[k]));
    }
    for (std::size_t k = 0; k < got.tensors.size(); ++k) {
      INFO("result " << k);
      check_tensor(got.tensors[k], expected.tensors[k], parity_of(c, k), m);
    }
    for (std::size_t k = 0; k < got.scalars.size(); ++k) {
      INFO("scalar " << k);
      if (m == measure::bitwise)
        CHECK(got.scalars[k] == expected.scalars[k]);
      else
        CHECK(got.scalars[k] == doctest::Approx(expected.scalars[k]).epsilon(1e-6));
    }
    ++ran;
  }
  return ran;
}

}  // namespace petra::testing

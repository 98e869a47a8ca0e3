// A block on a sim backend against its twin on the CPU: every pass (forward with its tape,
// backward, eval forward, inverse and the rebuild of a reversible block) gives the same bits, and
// so do the parameters, their gradients and the buffers.
#pragma once

#include <doctest/doctest.h>

#include <random>

#include "compute/blocks/block.hpp"
#include "tests/sim/sim_fixture.hpp"

namespace petra::testing {

inline activation random_pair(const activation_shape& s, std::mt19937& rng) {
  return {test::random_tensor(s.x1, rng), s.x2.empty() ? tensor{} : test::random_tensor(s.x2, rng)};
}

/// Every parameter's value and gradient and every buffer of `b`, bit-equal to `on_cpu`'s.
inline bool same_state(backend& be, block& on_sim, block& on_cpu) {
  auto p = on_sim.parameters(), q = on_cpu.parameters();
  auto r = on_sim.buffers(), s = on_cpu.buffers();
  if (p.size() != q.size() || r.size() != s.size()) return false;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (!same_bits(be, p[i]->value, q[i]->value) || !same_bits(be, p[i]->grad, q[i]->grad)) return false;
  for (std::size_t i = 0; i < r.size(); ++i)
    if (!same_bits(be, *r[i].value, *s[i].value)) return false;
  return true;
}

/// The same block on both backends: every pass gives the same bits.
inline void check_block(block& on_cpu, block& on_sim, backend& sim, const activation_shape& x_shape,
                        std::mt19937& rng) {
  INFO(on_cpu.name() << " (" << on_cpu.kind() << ")");
  const activation x = random_pair(x_shape, rng), dy = random_pair(on_cpu.output_shape(x_shape), rng);
  const activation xs = upload(sim, x), dys = upload(sim, dy);
  tape t, ts;
  const activation y = on_cpu.forward(x, pass::train, &t), ys = on_sim.forward(xs, pass::train, &ts);
  CHECK(same_bits(sim, ys, y));
  CHECK(same_bits(sim, on_sim.backward(ts, dys), on_cpu.backward(t, dy)));
  CHECK(same_bits(sim, on_sim.forward(xs, pass::eval, nullptr), on_cpu.forward(x, pass::eval, nullptr)));
  if (on_cpu.reversible()) {
    CHECK(same_bits(sim, on_sim.inverse(ys), on_cpu.inverse(y)));
    auto [rebuilt, dx] = on_cpu.backward_from_output(y, dy);
    auto [rebuilt_s, dx_s] = on_sim.backward_from_output(ys, dys);
    CHECK(same_bits(sim, rebuilt_s, rebuilt));
    CHECK(same_bits(sim, dx_s, dx));
  }
  CHECK(same_state(sim, on_sim, on_cpu));
}

}  // namespace petra::testing

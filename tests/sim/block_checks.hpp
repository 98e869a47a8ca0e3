// A block on a sim backend against its twin on the CPU: every pass (forward with its tape,
// backward, eval forward, inverse and the rebuild of a reversible block) gives the same bits, and
// so do the parameters, their gradients and the buffers.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

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

/// A whole network on sim against its twin on the CPU for one training step on `images`: the
/// forward, the loss (same bits, same correct count), the backward, then every block's state.
inline void check_network_step(backend& cpu, backend& sim, std::vector<std::unique_ptr<block>>& net_cpu,
                               std::vector<std::unique_ptr<block>>& net_sim, const tensor& images,
                               const std::vector<int32_t>& labels) {
  std::vector<tape> tapes(net_cpu.size()), tapes_sim(net_cpu.size());
  activation h{images, {}}, hs{sim.import(images), {}};
  for (std::size_t i = 0; i < net_cpu.size(); ++i) {
    h = net_cpu[i]->forward(h, pass::train, &tapes[i]);
    hs = net_sim[i]->forward(hs, pass::train, &tapes_sim[i]);
  }
  tensor d, ds;
  int64_t correct = 0, correct_sim = 0;
  const float loss = cpu.softmax_cross_entropy(h.x1, labels, &d, &correct);
  const float loss_sim = sim.softmax_cross_entropy(hs.x1, labels, &ds, &correct_sim);
  CHECK(std::memcmp(&loss, &loss_sim, sizeof loss) == 0);
  CHECK(correct == correct_sim);
  activation g{d, {}}, gs{ds, {}};
  for (std::size_t i = net_cpu.size(); i-- > 0;) {
    g = net_cpu[i]->backward(tapes[i], g);
    gs = net_sim[i]->backward(tapes_sim[i], gs);
  }
  for (std::size_t i = 0; i < net_cpu.size(); ++i) CHECK(same_state(sim, *net_sim[i], *net_cpu[i]));
}

}  // namespace petra::testing

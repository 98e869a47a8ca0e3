// Every backend op on a simulated device equals the CPU backend bit for bit (same kernels, same
// thread count), forward and backward, in-place accumulations included.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <string>

#include "tests/sim/sim_fixture.hpp"

using namespace petra;
using namespace petra::testing;
using petra::test::random_tensor;

namespace {

/// Runs `op` on the CPU and on sim:0 with copies of the same host inputs; every tensor it returns
/// (outputs, and inputs it accumulated into) must have the same bits. Both with `threads`.
void check_op(const std::string& name, const std::vector<tensor>& inputs,
              const std::function<std::vector<tensor>(backend&, std::vector<tensor>&)>& op) {
  for (int threads : {1, 2}) {
    INFO(name << " with " << threads << " thread(s)");
    sim_run run;
    auto sim = run.make(0, threads);
    auto cpu = make_cpu_backend(threads);
    std::vector<tensor> on_cpu, on_sim;
    for (const tensor& t : inputs) {
      on_cpu.push_back(t.defined() ? cpu->from_host(t) : tensor{});
      on_sim.push_back(t.defined() ? sim->from_host(t) : tensor{});
    }
    const std::vector<tensor> expected = op(*cpu, on_cpu);
    const std::vector<tensor> got = op(*sim, on_sim);
    REQUIRE(got.size() == expected.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      INFO("result " << k);
      if (got[k].defined()) CHECK(got[k].where() == sim->where());
      CHECK(same_bits(*sim, got[k], expected[k]));
    }
  }
}

bool same_float(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("convolution ops on sim equal the CPU bit for bit") {
  std::mt19937 rng(1);
  const tensor x = random_tensor({2, 3, 7, 6}, rng), w = random_tensor({4, 3, 3, 3}, rng);
  const tensor b = random_tensor({4}, rng);
  const conv2d_params strided{2, 1}, plain{1, 0};
  check_op("conv2d_forward", {x, w, b}, [&](backend& be, std::vector<tensor>& in) {
    return std::vector<tensor>{be.conv2d_forward(in[0], in[1], in[2], strided),
                               be.conv2d_forward(in[0], in[1], tensor{}, plain)};
  });
  const tensor dy = random_tensor({2, 4, 4, 3}, rng);  // the strided output's shape
  check_op("conv2d_backward_data", {dy, w}, [&](backend& be, std::vector<tensor>& in) {
    return std::vector<tensor>{be.conv2d_backward_data(in[0], in[1], x.shape(), strided)};
  });
  const tensor dw = random_tensor(w.shape(), rng), db = random_tensor({4}, rng);
  check_op("conv2d_backward_filter", {x, dy, dw, db}, [&](backend& be, std::vector<tensor>& in) {
    be.conv2d_backward_filter(in[0], in[1], strided, in[2], in[3]);  // accumulates (+=)
    tensor no_bias;
    be.conv2d_backward_filter(in[0], in[1], strided, in[2], no_bias);
    return std::vector<tensor>{in[2], in[3]};
  });
}

TEST_CASE("batch-norm ops on sim equal the CPU bit for bit") {
  std::mt19937 rng(2);
  const tensor x = random_tensor({4, 3, 5, 5}, rng), gamma = random_tensor({3}, rng),
               beta = random_tensor({3}, rng);
  const tensor dy = random_tensor(x.shape(), rng), mean = random_tensor({3}, rng);
  const tensor var = random_tensor({3}, rng, 0.5f, 1.5f);
  const tensor dgamma = random_tensor({3}, rng), dbeta = random_tensor({3}, rng);
  check_op("batch_norm train, running update, backward", {x, gamma, beta, dy, mean, var, dgamma, dbeta},
           [](backend& be, std::vector<tensor>& in) {
             batch_norm_saved saved;
             const tensor y = be.batch_norm_forward_train(in[0], in[1], in[2], 1e-5f, saved);
             be.batch_norm_update_running(saved, 4 * 5 * 5, 1e-5f, 0.1f, in[4], in[5]);
             const tensor dx = be.batch_norm_backward(in[0], in[1], saved, in[3], in[6], in[7]);
             return std::vector<tensor>{y, saved.mean, saved.inv_std, in[4], in[5], dx, in[6], in[7]};
           });
  check_op("batch_norm_forward_eval", {x, gamma, beta, mean, var}, [](backend& be, std::vector<tensor>& in) {
    return std::vector<tensor>{be.batch_norm_forward_eval(in[0], in[1], in[2], in[3], in[4], 1e-5f)};
  });
}

TEST_CASE("pointwise, pooling and channel ops on sim equal the CPU bit for bit") {
  std::mt19937 rng(3);
  const tensor a = random_tensor({2, 6, 6, 4}, rng), b = random_tensor({2, 6, 6, 4}, rng);
  check_op("relu, add, sub, add_inplace", {a, b}, [](backend& be, std::vector<tensor>& in) {
    const tensor y = be.relu_forward(in[0]);
    const tensor dx = be.relu_backward(y, in[1]);
    const tensor sum = be.add(in[0], in[1]), difference = be.sub(in[0], in[1]);
    tensor acc = be.add(sum, difference);
    be.add_inplace(acc, in[1]);
    return std::vector<tensor>{y, dx, sum, difference, acc};
  });
  const tensor pooled_dy = random_tensor({2, 6, 3, 2}, rng), avg_dy = random_tensor({2, 6}, rng);
  check_op("max and average pooling", {a, pooled_dy, avg_dy}, [&](backend& be, std::vector<tensor>& in) {
    return std::vector<tensor>{be.max_pool2x2_forward(in[0]), be.max_pool2x2_backward(in[0], in[1]),
                               be.global_avg_pool_forward(in[0]),
                               be.global_avg_pool_backward(in[2], a.shape())};
  });
  check_op("split and concat channels", {a}, [](backend& be, std::vector<tensor>& in) {
    auto [first, second] = be.split_channels(in[0]);
    return std::vector<tensor>{first, second, be.concat_channels(second, first)};
  });
}

TEST_CASE("linear, loss and optimizer ops on sim equal the CPU bit for bit") {
  std::mt19937 rng(4);
  const tensor x = random_tensor({5, 7}, rng), w = random_tensor({3, 7}, rng), b = random_tensor({3}, rng);
  const tensor dy = random_tensor({5, 3}, rng), dw = random_tensor({3, 7}, rng), db = random_tensor({3}, rng);
  check_op("linear", {x, w, b, dy, dw, db}, [](backend& be, std::vector<tensor>& in) {
    const tensor y = be.linear_forward(in[0], in[1], in[2]);
    const tensor y_no_bias = be.linear_forward(in[0], in[1], tensor{});
    const tensor dx = be.linear_backward_data(in[3], in[1]);
    be.linear_backward_weight(in[0], in[3], in[4], in[5]);
    return std::vector<tensor>{y, y_no_bias, dx, in[4], in[5]};
  });

  const tensor logits = random_tensor({6, 5}, rng, -3.f, 3.f);
  const std::vector<int32_t> labels = {0, 4, 2, 2, 1, 3};
  sim_run run;
  auto sim = run.make(0);
  auto cpu = make_cpu_backend(1);
  tensor dlogits_cpu, dlogits_sim;
  int64_t correct_cpu = -1, correct_sim = -2;
  const float loss_cpu = cpu->softmax_cross_entropy(logits, labels, &dlogits_cpu, &correct_cpu);
  const float loss_sim =
      sim->softmax_cross_entropy(sim->from_host(logits), labels, &dlogits_sim, &correct_sim);
  CHECK(same_float(loss_sim, loss_cpu));
  CHECK(correct_sim == correct_cpu);
  CHECK(same_bits(*sim, dlogits_sim, dlogits_cpu));
  CHECK(same_float(sim->softmax_cross_entropy(sim->from_host(logits), labels, nullptr, nullptr), loss_cpu));

  const tensor weights = random_tensor({4, 3}, rng), grad = random_tensor({4, 3}, rng);
  const tensor momentum = random_tensor({4, 3}, rng);
  check_op("sgd_update", {weights, grad, momentum}, [](backend& be, std::vector<tensor>& in) {
    sgd_update_params p;
    p.lr = 0.1f, p.momentum = 0.9f, p.weight_decay = 5e-4f, p.nesterov = true, p.grad_scale = 0.5f;
    be.sgd_update(in[0], in[1], in[2], p);
    be.sgd_update(in[0], in[1], in[2], p);
    return std::vector<tensor>{in[0], in[2]};
  });
}

TEST_CASE("memory ops on sim: zeros, copy, fill_zero, empty, from_host takes the values at the call") {
  std::mt19937 rng(5);
  const tensor a = random_tensor({3, 4}, rng);
  check_op("zeros, copy, fill_zero", {a}, [](backend& be, std::vector<tensor>& in) {
    tensor z = be.zeros({3, 4}), c = be.empty({3, 4}), cleared = be.empty({2, 2});
    be.copy(in[0], c);
    be.fill_zero(cleared);
    return std::vector<tensor>{z, c, cleared};
  });
  sim_run run;
  auto sim = run.make(0);
  tensor host = a.clone();
  const tensor on_sim = sim->from_host(host);
  host.data()[0] = 42.f;  // after the call: not seen by the device copy
  CHECK(bit_equal(sim->to_host(on_sim), a));
  CHECK(sim->empty({2, 3}).where() == device{device_type::sim, 0});
  tensor wrong = sim->zeros({4, 3});
  CHECK_THROWS_WITH_AS(sim->copy(on_sim, wrong), doctest::Contains("must have the same shape"),
                       std::invalid_argument);
}

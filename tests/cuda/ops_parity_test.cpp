// GPU against CPU for the memory, pointwise, pooling, linear, channel, loss and SGD ops.
#include <doctest/doctest.h>

#include <array>
#include <thread>

#include "compute/cuda/cuda_backend_impl.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("memory: from_host/to_host round trip, zeros, copy, fill_zero, empty shapes") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(10);
  const tensor x = random_host({3, 4, 5}, rng);
  const tensor xg = be.gpu->from_host(x);
  CHECK(xg.where() == device{device_type::cuda, 0});
  CHECK(bit_equal(be.gpu->to_host(xg), x));
  CHECK(bit_equal(be.gpu->to_host(be.gpu->zeros({7, 3})), tensor::zeros({7, 3})));
  tensor dst = be.gpu->empty(x.shape());
  be.gpu->copy(xg, dst);
  CHECK(bit_equal(be.gpu->to_host(dst), x));
  be.gpu->fill_zero(dst);
  CHECK(bit_equal(be.gpu->to_host(dst), tensor::zeros(x.shape())));
  CHECK(be.gpu->to_host(xg).shape() == x.shape());
  CHECK(be.gpu->to_host(be.gpu->empty({0, 3})).numel() == 0);
  // A reshaped view keeps the same device buffer.
  CHECK(bit_equal(be.gpu->to_host(xg.reshaped({12, 5})), x.reshaped({12, 5})));
}

TEST_CASE("the backend runs from any thread (it makes its GPU current first)") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(11);
  const tensor x = random_host({64}, rng);
  tensor on_thread;
  std::thread worker([&] { on_thread = be.gpu->to_host(be.gpu->relu_forward(be.gpu->from_host(x))); });
  worker.join();
  CHECK(bit_equal(on_thread, be.cpu->relu_forward(x)));
}

TEST_CASE("pointwise: relu forward/backward, add, sub, add_inplace are exact") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(12);
  const shape_t shape{5, 3, 7, 9};
  const tensor a = random_host(shape, rng), b = random_host(shape, rng);
  const tensor ag = be.gpu->from_host(a), bg = be.gpu->from_host(b);
  const tensor y = be.cpu->relu_forward(a);
  const tensor yg = be.gpu->relu_forward(ag);
  CHECK(bit_equal(be.gpu->to_host(yg), y));
  CHECK(bit_equal(be.gpu->to_host(be.gpu->relu_backward(yg, bg)), be.cpu->relu_backward(y, b)));
  CHECK(bit_equal(be.gpu->to_host(be.gpu->add(ag, bg)), be.cpu->add(a, b)));
  CHECK(bit_equal(be.gpu->to_host(be.gpu->sub(ag, bg)), be.cpu->sub(a, b)));
  tensor acc = a.clone();
  tensor accg = be.gpu->from_host(a);
  be.cpu->add_inplace(acc, b);
  be.gpu->add_inplace(accg, bg);
  CHECK(bit_equal(be.gpu->to_host(accg), acc));
}

TEST_CASE("pooling: max pool (with ties) and global average pool, forward and backward") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(13);
  tensor x = random_host({3, 4, 6, 8}, rng);
  for (int64_t i = 0; i < x.numel(); i += 3) x.data()[i] = 1.f;  // ties: the first maximum wins on both
  const tensor xg = be.gpu->from_host(x);
  CHECK(bit_equal(be.gpu->to_host(be.gpu->max_pool2x2_forward(xg)), be.cpu->max_pool2x2_forward(x)));
  const tensor dy = random_host({3, 4, 3, 4}, rng);
  CHECK(bit_equal(be.gpu->to_host(be.gpu->max_pool2x2_backward(xg, be.gpu->from_host(dy))),
                  be.cpu->max_pool2x2_backward(x, dy)));

  CHECK(gpu_vs_cpu(*be.gpu, be.gpu->global_avg_pool_forward(xg), be.cpu->global_avg_pool_forward(x)) <
        op_tolerance);
  const tensor dp = random_host({3, 4}, rng);
  CHECK(gpu_vs_cpu(*be.gpu, be.gpu->global_avg_pool_backward(be.gpu->from_host(dp), x.shape()),
                   be.cpu->global_avg_pool_backward(dp, x.shape())) < op_tolerance);
}

TEST_CASE("linear: forward with and without bias, backward data, accumulating weight gradients") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  for (bool tf32 : {false, true}) {
    cpu_and_gpu be(tf32);
    const double tolerance = tf32 ? tf32_tolerance : op_tolerance;
    std::mt19937 rng(14);
    for (const auto& [n, in, out] :
         std::vector<std::array<int64_t, 3>>{{4, 6, 10}, {128, 1024, 10}, {3, 1, 1}}) {
      INFO("tf32 " << tf32 << ", N " << n << " I " << in << " O " << out);
      const tensor x = random_host({n, in}, rng), w = random_host({out, in}, rng),
                   b = random_host({out}, rng);
      const tensor xg = be.gpu->from_host(x), wg = be.gpu->from_host(w), bg = be.gpu->from_host(b);
      CHECK(gpu_vs_cpu(*be.gpu, be.gpu->linear_forward(xg, wg, bg), be.cpu->linear_forward(x, w, b)) <
            tolerance);
      CHECK(gpu_vs_cpu(*be.gpu, be.gpu->linear_forward(xg, wg, {}), be.cpu->linear_forward(x, w, {})) <
            tolerance);
      const tensor dy = random_host({n, out}, rng);
      const tensor dyg = be.gpu->from_host(dy);
      CHECK(gpu_vs_cpu(*be.gpu, be.gpu->linear_backward_data(dyg, wg), be.cpu->linear_backward_data(dy, w)) <
            tolerance);
      tensor dw = random_host({out, in}, rng), db = random_host({out}, rng);
      tensor dwg = be.gpu->from_host(dw), dbg = be.gpu->from_host(db);
      for (int pass = 0; pass < 2; ++pass) {
        be.cpu->linear_backward_weight(x, dy, dw, db);
        be.gpu->linear_backward_weight(xg, dyg, dwg, dbg);
      }
      CHECK(gpu_vs_cpu(*be.gpu, dwg, dw) < tolerance);
      CHECK(gpu_vs_cpu(*be.gpu, dbg, db) < op_tolerance);  // our kernel, not a GEMM
    }
  }
}

TEST_CASE("channels: split and concat halves are exact and inverse to each other") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(15);
  for (const shape_t& shape : {shape_t{3, 8, 5, 5}, shape_t{4, 2, 1, 1}}) {
    const tensor x = random_host(shape, rng);
    const tensor xg = be.gpu->from_host(x);
    const auto [a, b] = be.cpu->split_channels(x);
    const auto [ag, bg] = be.gpu->split_channels(xg);
    CHECK(bit_equal(be.gpu->to_host(ag), a));
    CHECK(bit_equal(be.gpu->to_host(bg), b));
    CHECK(bit_equal(be.gpu->to_host(be.gpu->concat_channels(ag, bg)), x));
  }
}

TEST_CASE("softmax cross-entropy: loss, gradient and hit count match the CPU") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(16);
  for (const auto& [n, k] : std::vector<std::array<int64_t, 2>>{{128, 10}, {5, 1000}, {1, 1}}) {
    INFO("N " << n << " K " << k);
    const tensor logits = random_host({n, k}, rng, 4.f);
    std::vector<int32_t> labels;
    for (int64_t i = 0; i < n; ++i) labels.push_back(static_cast<int32_t>(rng() % k));
    tensor dlogits, dlogitsg;
    int64_t correct = -1, correctg = -2;
    const float loss = be.cpu->softmax_cross_entropy(logits, labels, &dlogits, &correct);
    const float lossg =
        be.gpu->softmax_cross_entropy(be.gpu->from_host(logits), labels, &dlogitsg, &correctg);
    CHECK(lossg == doctest::Approx(loss).epsilon(1e-6));
    CHECK(correctg == correct);
    CHECK(gpu_vs_cpu(*be.gpu, dlogitsg, dlogits) < op_tolerance);
    int64_t eval_correct = -1;
    CHECK(be.gpu->softmax_cross_entropy(be.gpu->from_host(logits), labels, nullptr, &eval_correct) ==
          doctest::Approx(loss).epsilon(1e-6));
    CHECK(eval_correct == correct);
  }
  const std::vector<int32_t> bad{0, 10};
  CHECK_THROWS_WITH_AS(be.gpu->softmax_cross_entropy(be.gpu->zeros({2, 10}), bad, nullptr, nullptr),
                       doctest::Contains("labels[1] = 10 is outside [0, 10)"), std::invalid_argument);
}

TEST_CASE("SGD: plain, momentum, Nesterov, weight decay and gradient scale, several steps") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(17);
  std::vector<sgd_update_params> settings(4);
  settings[0] = {0.1f, 0.f, 0.f, false, 1.f};
  settings[1] = {0.1f, 0.9f, 5e-4f, false, 0.5f};
  settings[2] = {0.05f, 0.9f, 5e-4f, true, 0.25f};
  settings[3] = {0.2f, 0.f, 1e-2f, false, 1.f};
  for (const sgd_update_params& p : settings) {
    INFO("momentum " << p.momentum << " nesterov " << p.nesterov << " wd " << p.weight_decay);
    tensor w = random_host({33, 7}, rng), buffer = tensor::zeros({33, 7});
    tensor wg = be.gpu->from_host(w), bufferg = be.gpu->zeros({33, 7});
    for (int step = 0; step < 3; ++step) {
      const tensor g = random_host({33, 7}, rng);
      be.cpu->sgd_update(w, g, buffer, p);
      be.gpu->sgd_update(wg, be.gpu->from_host(g), bufferg, p);
    }
    CHECK(gpu_vs_cpu(*be.gpu, wg, w) < op_tolerance);
    if (p.momentum != 0.f) CHECK(gpu_vs_cpu(*be.gpu, bufferg, buffer) < op_tolerance);
  }
}

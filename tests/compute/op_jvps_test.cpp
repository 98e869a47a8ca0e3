// Every op's forward mode against central differences, and against the op's backward by the
// adjoint identity ⟨J v, u⟩ = ⟨v, Jᵀ u⟩.
#include "compute/forward/op_jvps.hpp"

#include <doctest/doctest.h>

#include "tests/compute/jvp_check.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("conv2d's tangent (input, weight, bias) matches differences and its backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(31);
  for (conv2d_params p : {conv2d_params{1, 1}, conv2d_params{2, 1}, conv2d_params{2, 0}}) {
    const tensor x = random_tensor({3, 4, 7, 7}, rng), w = random_tensor({5, 4, 3, 3}, rng, 0.3f),
                 b = random_tensor({5}, rng);
    const tensor x_dot = random_direction(x.shape(), rng), w_dot = random_direction(w.shape(), rng),
                 b_dot = random_direction(b.shape(), rng);
    const tensor u = random_tensor(be->conv2d_forward(x, w, b, p).shape(), rng);
    // Each tangent alone (the others zero), then all three.
    for (int which : {0, 1, 2, 3}) {
      const tensor xd = which == 0 || which == 3 ? x_dot : tensor{};
      const tensor wd = which == 1 || which == 3 ? w_dot : tensor{};
      const tensor bd = which == 2 || which == 3 ? b_dot : tensor{};
      const tensor y_dot = conv2d_tangent(*be, x, xd, w, wd, bd, p);
      INFO("stride " << p.stride << " padding " << p.padding << " tangents " << which);
      check_directional_derivative(
          [&](double s) {
            return dot(
                u, be->conv2d_forward(step_along(x, s, xd), step_along(w, s, wd), step_along(b, s, bd), p));
          },
          dot(u, y_dot));
      tensor dw = tensor::zeros(w.shape()), db = tensor::zeros(b.shape());
      be->conv2d_backward_filter(x, u, p, dw, db);
      const tensor dx = be->conv2d_backward_data(u, w, x.shape(), p);
      check_adjoint(dot(u, y_dot), dot_or_zero(xd, dx) + dot_or_zero(wd, dw) + dot_or_zero(bd, db));
    }
    CHECK_FALSE(conv2d_tangent(*be, x, {}, w, {}, {}, p).defined());  // no tangent: nothing computed
  }
}

TEST_CASE("linear's tangent matches differences and its backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(32);
  const tensor x = random_tensor({6, 5}, rng), w = random_tensor({3, 5}, rng), b = random_tensor({3}, rng);
  const tensor x_dot = random_direction(x.shape(), rng), w_dot = random_direction(w.shape(), rng),
               b_dot = random_direction(b.shape(), rng);
  const tensor u = random_tensor({6, 3}, rng);
  for (bool with_x : {false, true}) {
    const tensor xd = with_x ? x_dot : tensor{};
    const tensor y_dot = linear_tangent(*be, x, xd, w, w_dot, b_dot);
    check_directional_derivative(
        [&](double s) {
          return dot(u, be->linear_forward(step_along(x, s, xd), axpy(w, s, w_dot), axpy(b, s, b_dot)));
        },
        dot(u, y_dot));
    tensor dw = tensor::zeros(w.shape()), db = tensor::zeros(b.shape());
    be->linear_backward_weight(x, u, dw, db);
    check_adjoint(dot(u, y_dot),
                  dot_or_zero(xd, be->linear_backward_data(u, w)) + dot(w_dot, dw) + dot(b_dot, db));
  }
}

TEST_CASE("batch norm's Jacobian in x is symmetric, so its backward applied to a tangent is J ẋ") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(33);
  const tensor x = random_tensor({4, 3, 5, 5}, rng), gamma = random_tensor({3}, rng),
               beta = random_tensor({3}, rng);
  batch_norm_saved saved;
  be->batch_norm_forward_train(x, gamma, beta, 1e-5f, saved);
  const tensor u = random_tensor(x.shape(), rng), v = random_tensor(x.shape(), rng);
  auto backward_of = [&](const tensor& dy) {
    tensor dgamma = tensor::zeros({3}), dbeta = tensor::zeros({3});
    return be->batch_norm_backward(x, gamma, saved, dy, dgamma, dbeta);
  };
  // ⟨u, Jᵀ v⟩ = ⟨Jᵀ u, v⟩ for every u, v: Jᵀ = J.
  check_adjoint(dot(u, backward_of(v)), dot(backward_of(u), v));
  // And Jᵀ v is the directional derivative along v, elementwise (probed by u).
  check_directional_derivative(
      [&](double s) {
        batch_norm_saved unused;
        return dot(u, be->batch_norm_forward_train(axpy(x, s, v), gamma, beta, 1e-5f, unused));
      },
      dot(u, backward_of(v)));
}

TEST_CASE("batch norm's tangent with batch statistics (train) and running statistics (eval)") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(34);
  const float eps = 1e-5f;
  const tensor x = random_tensor({4, 3, 5, 5}, rng), gamma = random_tensor({3}, rng),
               beta = random_tensor({3}, rng);
  const tensor x_dot = random_direction(x.shape(), rng), gamma_dot = random_direction({3}, rng),
               beta_dot = random_direction({3}, rng);
  const tensor u = random_tensor(x.shape(), rng);
  for (bool with_parameters : {false, true}) {
    const tensor gd = with_parameters ? gamma_dot : tensor{}, bd = with_parameters ? beta_dot : tensor{};
    batch_norm_saved saved;
    be->batch_norm_forward_train(x, gamma, beta, eps, saved);
    const tensor y_dot = batch_norm_train_tangent(*be, x, x_dot, gamma, gd, bd, saved, eps);
    INFO("train, parameter tangents: " << with_parameters);
    check_directional_derivative(
        [&](double s) {
          batch_norm_saved unused;
          return dot(u, be->batch_norm_forward_train(axpy(x, s, x_dot), step_along(gamma, s, gd),
                                                     step_along(beta, s, bd), eps, unused));
        },
        dot(u, y_dot));
    tensor dgamma = tensor::zeros({3}), dbeta = tensor::zeros({3});
    const tensor dx = be->batch_norm_backward(x, gamma, saved, u, dgamma, dbeta);
    check_adjoint(dot(u, y_dot), dot(x_dot, dx) + dot_or_zero(gd, dgamma) + dot_or_zero(bd, dbeta));
  }
  // Only parameter tangents: γ̇·x̂ + β̇.
  batch_norm_saved saved;
  be->batch_norm_forward_train(x, gamma, beta, eps, saved);
  const tensor by_parameters = batch_norm_train_tangent(*be, x, {}, gamma, gamma_dot, beta_dot, saved, eps);
  check_directional_derivative(
      [&](double s) {
        batch_norm_saved unused;
        return dot(u, be->batch_norm_forward_train(x, axpy(gamma, s, gamma_dot), axpy(beta, s, beta_dot), eps,
                                                   unused));
      },
      dot(u, by_parameters));

  tensor running_var = random_tensor({3}, rng);
  for (int64_t c = 0; c < 3; ++c) running_var.data()[c] = 0.5f + std::abs(running_var.data()[c]);
  const tensor running_mean = random_tensor({3}, rng);
  const tensor eval_dot =
      batch_norm_eval_tangent(*be, x, x_dot, gamma, gamma_dot, beta_dot, running_mean, running_var, eps);
  INFO("eval");
  check_directional_derivative(
      [&](double s) {
        return dot(u, be->batch_norm_forward_eval(axpy(x, s, x_dot), axpy(gamma, s, gamma_dot),
                                                  axpy(beta, s, beta_dot), running_mean, running_var, eps));
      },
      dot(u, eval_dot));
}

TEST_CASE("ReLU's, the pools' and global average pool's tangents match differences and their backwards") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(35);
  tensor x = random_tensor({3, 4, 6, 8}, rng);
  for (int64_t i = 0; i < x.numel(); ++i)  // no kink within reach of the steps
    if (std::abs(x.data()[i]) < 0.05f) x.data()[i] = 0.1f;
  const tensor x_dot = random_direction(x.shape(), rng);

  const tensor y = be->relu_forward(x);
  const tensor u = random_tensor(x.shape(), rng);
  const tensor relu_dot = relu_tangent(*be, y, x_dot);
  check_directional_derivative([&](double s) { return dot(u, be->relu_forward(axpy(x, s, x_dot))); },
                               dot(u, relu_dot));
  check_adjoint(dot(u, relu_dot), dot(x_dot, be->relu_backward(y, u)));

  const tensor pooled_u = random_tensor({3, 4, 3, 4}, rng);
  const tensor max_dot = max_pool2x2_tangent(*be, x, x_dot);
  check_directional_derivative(
      [&](double s) { return dot(pooled_u, be->max_pool2x2_forward(axpy(x, s, x_dot))); },
      dot(pooled_u, max_dot));
  check_adjoint(dot(pooled_u, max_dot), dot(x_dot, be->max_pool2x2_backward(x, pooled_u)));

  const tensor mean_u = random_tensor({3, 4}, rng);
  const tensor mean_dot = global_avg_pool_tangent(*be, x_dot);
  check_directional_derivative(
      [&](double s) { return dot(mean_u, be->global_avg_pool_forward(axpy(x, s, x_dot))); },
      dot(mean_u, mean_dot));
  check_adjoint(dot(mean_u, mean_dot), dot(x_dot, be->global_avg_pool_backward(mean_u, x.shape())));

  for (const tensor* zero : {&relu_dot, &max_dot, &mean_dot}) CHECK(zero->defined());
  CHECK_FALSE(relu_tangent(*be, y, {}).defined());
  CHECK_FALSE(max_pool2x2_tangent(*be, x, {}).defined());
  CHECK_FALSE(global_avg_pool_tangent(*be, {}).defined());
}

TEST_CASE("the max pool's tangent takes the first maximum of a tie, as its backward") {
  auto be = make_cpu_backend(1);
  // One window of equal values: the tangent is ẋ at the top-left, where the backward puts dy.
  const tensor x = tensor::from_vector({1, 1, 2, 2}, {3, 3, 3, 3});
  const tensor x_dot = tensor::from_vector({1, 1, 2, 2}, {5, 6, 7, 8});
  CHECK(be->max_pool2x2_jvp(x, x_dot).to_vector() == std::vector<float>{5});
  CHECK(be->max_pool2x2_backward(x, tensor::from_vector({1, 1, 1, 1}, {1})).to_vector() ==
        std::vector<float>{1, 0, 0, 0});
  CHECK_THROWS_WITH_AS(be->max_pool2x2_jvp(x, tensor::zeros({1, 1, 2, 4})),
                       doctest::Contains("x_dot (1, 1, 2, 4) and x (1, 1, 2, 2) must have the same shape"),
                       std::invalid_argument);
}

TEST_CASE("add, sub, split and concat carry tangents, a missing one as zero") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(36);
  const tensor a = random_tensor({2, 4, 3, 3}, rng), b = random_tensor({2, 4, 3, 3}, rng);
  CHECK(add_tangents(*be, a, b).to_vector() == be->add(a, b).to_vector());
  CHECK(sub_tangents(*be, a, b).to_vector() == be->sub(a, b).to_vector());
  CHECK(add_tangents(*be, a, {}).to_vector() == a.to_vector());
  CHECK(sub_tangents(*be, {}, b).to_vector() == be->sub(tensor::zeros(b.shape()), b).to_vector());
  CHECK_FALSE(add_tangents(*be, {}, {}).defined());
  auto [first, second] = split_channels_tangent(*be, a);
  CHECK(be->concat_channels(first, second).to_vector() == a.to_vector());
  CHECK(concat_channels_tangent(*be, first, first.shape(), {}, second.shape()).to_vector() ==
        be->concat_channels(first, tensor::zeros(second.shape())).to_vector());
  CHECK_FALSE(split_channels_tangent(*be, {}).first.defined());
  CHECK_FALSE(concat_channels_tangent(*be, {}, first.shape(), {}, second.shape()).defined());
}

TEST_CASE("the loss's JVP: each sample's ℓ̇_n and the mean's against differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(37);
  const int64_t n = 5, classes = 4;
  const tensor logits = random_tensor({n, classes}, rng), logits_dot = random_direction({n, classes}, rng);
  const std::vector<int32_t> labels = {0, 3, 1, 1, 2};
  const loss_jvp result = softmax_cross_entropy_jvp(*be, logits, logits_dot, labels);
  int64_t correct = 0;
  CHECK(result.loss == be->softmax_cross_entropy(logits, labels, nullptr, &correct));
  CHECK(result.correct == correct);
  REQUIRE(result.per_sample.size() == static_cast<std::size_t>(n));
  auto row = [&](const tensor& t, int64_t i) {
    return tensor::from_vector({1, classes},
                               std::vector<float>(t.data() + i * classes, t.data() + (i + 1) * classes));
  };
  for (int64_t i = 0; i < n; ++i) {
    INFO("sample " << i);
    check_directional_derivative(
        [&](double s) {
          return be->softmax_cross_entropy(axpy(row(logits, i), s, row(logits_dot, i)), {labels[i]}, nullptr,
                                           nullptr);
        },
        result.per_sample[i]);
  }
  check_directional_derivative(
      [&](double s) {
        return be->softmax_cross_entropy(axpy(logits, s, logits_dot), labels, nullptr, nullptr);
      },
      result.mean());
  const loss_jvp flat = softmax_cross_entropy_jvp(*be, logits, {}, labels);
  CHECK(flat.per_sample == std::vector<double>(n, 0.0));
}

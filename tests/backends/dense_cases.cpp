// The table's linear, loss and optimizer cases.
#include <array>
#include <cmath>

#include "tests/backends/op_table.hpp"
#include "tests/backends/parity_measures.hpp"

namespace petra::testing {

namespace {

std::vector<op_case> linear_cases(std::mt19937& rng) {
  std::vector<op_case> cases;
  for (const auto& [n, in, out] :
       std::vector<std::array<int64_t, 3>>{{4, 6, 10}, {128, 1024, 10}, {3, 1, 1}, {5, 7, 3}}) {
    const tensor x = random_host({n, in}, rng), w = random_host({out, in}, rng), b = random_host({out}, rng);
    const tensor dy = random_host({n, out}, rng), dw = random_host({out, in}, rng),
                 db = random_host({out}, rng);
    cases.push_back({"linear_forward with and without bias, backward_data, backward_weight twice: N " +
                         std::to_string(n) + " I " + std::to_string(in) + " O " + std::to_string(out),
                     {x, w, b, dy, dw, db},
                     [](backend& be, std::vector<tensor>& t) {
                       const tensor y = be.linear_forward(t[0], t[1], t[2]);
                       const tensor y_no_bias = be.linear_forward(t[0], t[1], tensor{});
                       const tensor dx = be.linear_backward_data(t[3], t[1]);
                       for (int pass = 0; pass < 2; ++pass) be.linear_backward_weight(t[0], t[3], t[4], t[5]);
                       return op_result{{y, y_no_bias, dx, t[4], t[5]}};
                     },
                     // db is a sum of our own, not a GEMM: fp32 round-off even with TF32.
                     {parity::tf32, parity::tf32, parity::tf32, parity::tf32, parity::rounding},
                     {bf16_rule::products, bf16_rule::products, bf16_rule::products, bf16_rule::products,
                      bf16_rule::same}});
  }
  return cases;
}

op_case loss_case(const tensor& logits, const std::vector<int32_t>& labels) {
  return {"softmax_cross_entropy with and without its gradient: logits " + logits.shape_str(),
          {logits},
          [labels](backend& be, std::vector<tensor>& in) {
            tensor dlogits;
            int64_t correct = -1, eval_correct = -1;
            const float loss = be.softmax_cross_entropy(in[0], labels, &dlogits, &correct);
            const float eval_loss = be.softmax_cross_entropy(in[0], labels, nullptr, &eval_correct);
            const float bare_loss = be.softmax_cross_entropy(in[0], labels, nullptr, nullptr);
            // Deferred: the same numbers once read (a GPU sums on the device, in row order too).
            tensor deferred_dlogits;
            int64_t deferred_correct = -1;
            const deferred_loss pending = be.softmax_cross_entropy_deferred(in[0], labels, &deferred_dlogits);
            const float deferred = pending.get(&deferred_correct);
            return op_result{
                {dlogits, deferred_dlogits},
                {loss, static_cast<double>(correct), eval_loss, static_cast<double>(eval_correct), bare_loss,
                 deferred, static_cast<double>(deferred_correct), static_cast<double>(deferred) - loss}};
          },
          {parity::rounding}};
}

std::vector<op_case> loss_cases(std::mt19937& rng) {
  std::vector<op_case> cases;
  for (const auto& [n, k] : std::vector<std::array<int64_t, 2>>{{128, 10}, {5, 1000}, {1, 1}}) {
    std::vector<int32_t> labels;
    const tensor logits = random_host({n, k}, rng, 4.f);
    for (int64_t i = 0; i < n; ++i) labels.push_back(static_cast<int32_t>(rng() % k));
    cases.push_back(loss_case(logits, labels));
  }
  cases.push_back(loss_case(random_host({6, 5}, rng, 2.f), {0, 4, 2, 2, 1, 3}));
  return cases;
}

struct sgd_setting {
  sgd_update_params p;
  shape_t shape;
  bool warm_buffer;  // a non-zero momentum buffer; otherwise zero, PyTorch's start
};

std::vector<op_case> sgd_cases(std::mt19937& rng) {
  const std::vector<sgd_setting> settings = {{{0.1f, 0.f, 0.f, false, 1.f}, {33, 7}, false},
                                             {{0.1f, 0.9f, 5e-4f, false, 0.5f}, {33, 7}, false},
                                             {{0.05f, 0.9f, 5e-4f, true, 0.25f}, {33, 7}, false},
                                             {{0.2f, 0.f, 1e-2f, false, 1.f}, {33, 7}, false},
                                             {{0.1f, 0.9f, 5e-4f, true, 0.5f}, {4, 3}, true}};
  std::vector<op_case> cases;
  for (const sgd_setting& s : settings) {
    const sgd_update_params p = s.p;
    const tensor buffer = s.warm_buffer ? random_host(s.shape, rng) : tensor::zeros(s.shape);
    cases.push_back({"sgd_update, three steps: momentum " + std::to_string(p.momentum) + " nesterov " +
                         std::to_string(p.nesterov) + " weight decay " + std::to_string(p.weight_decay) +
                         " grad scale " + std::to_string(p.grad_scale) + ", " + to_string(s.shape),
                     {random_host(s.shape, rng), buffer, random_host(s.shape, rng), random_host(s.shape, rng),
                      random_host(s.shape, rng)},
                     [p](backend& be, std::vector<tensor>& in) {
                       for (int step = 0; step < 3; ++step) be.sgd_update(in[0], in[2 + step], in[1], p);
                       return op_result{{in[0], in[1]}};
                     },
                     {parity::rounding}});
  }
  return cases;
}

/// sgd_step over parameters of several shapes, each with its own weight decay, three steps: each
/// w and buffer, and each gradient zeroed by the step.
std::vector<op_case> sgd_step_cases(std::mt19937& rng) {
  const std::vector<shape_t> shapes = {{64, 3, 3, 3}, {64}, {10, 64}, {5000}, {1}};
  std::vector<op_case> cases;
  for (const sgd_update_params& p :
       {sgd_update_params{0.1f, 0.9f, 0.f, true, 0.5f}, sgd_update_params{0.2f, 0.f, 0.f, false, 1.f}}) {
    std::vector<tensor> inputs;  // per parameter: w, buffer, grad
    for (const shape_t& s : shapes)
      for (int k = 0; k < 3; ++k) inputs.push_back(random_host(s, rng));
    cases.push_back({"sgd_step, three steps over " + std::to_string(shapes.size()) +
                         " parameters: momentum " + std::to_string(p.momentum),
                     inputs,
                     [p, count = shapes.size()](backend& be, std::vector<tensor>& in) {
                       std::vector<sgd_target> targets;
                       for (std::size_t i = 0; i < count; ++i)
                         targets.push_back({&in[3 * i], &in[3 * i + 2], &in[3 * i + 1],
                                            i % 2 ? 0.f : 5e-4f * static_cast<float>(i + 1)});
                       for (int step = 0; step < 3; ++step) {
                         be.sgd_step(targets, p);
                         // The next step's gradients (the step zeroed them): each w, but the first
                         // parameter's, which stays zero.
                         for (std::size_t i = 1; i < count; ++i) be.add_inplace(in[3 * i + 2], in[3 * i]);
                       }
                       return op_result{in};
                     },
                     {parity::rounding}});
  }
  return cases;
}

/// A second moment that has seen gradients: |x| of a random tensor (v ≥ 0).
tensor warm_second_moment(const shape_t& shape, std::mt19937& rng) {
  tensor v = random_host(shape, rng);
  for (int64_t i = 0; i < v.numel(); ++i) v.data()[i] = std::abs(v.data()[i]) * 0.01f;
  return v;
}

/// adamw_update, three steps from zero moments (t = 1, 2, 3) and from warm ones (t = 11, 12, 13).
std::vector<op_case> adamw_cases(std::mt19937& rng) {
  std::vector<op_case> cases;
  for (const bool warm : {false, true})
    for (const float wd : {0.f, 0.05f}) {
      adamw_update_params p;
      p.lr = 1e-3f;
      p.weight_decay = wd;
      p.grad_scale = warm ? 0.5f : 1.f;
      p.step = warm ? 11 : 1;
      const shape_t shape = warm ? shape_t{4, 3} : shape_t{33, 7};
      const tensor m = warm ? random_host(shape, rng, 0.1f) : tensor::zeros(shape);
      const tensor v = warm ? warm_second_moment(shape, rng) : tensor::zeros(shape);
      cases.push_back({"adamw_update, three steps from t " + std::to_string(p.step) + ": weight decay " +
                           std::to_string(wd) + " grad scale " + std::to_string(p.grad_scale) + ", " +
                           to_string(shape),
                       {random_host(shape, rng), m, v, random_host(shape, rng), random_host(shape, rng),
                        random_host(shape, rng)},
                       [p](backend& be, std::vector<tensor>& in) {
                         adamw_update_params at = p;
                         for (int step = 0; step < 3; ++step, ++at.step)
                           be.adamw_update(in[0], in[3 + step], in[1], in[2], at);
                         return op_result{{in[0], in[1], in[2]}};
                       },
                       {parity::rounding}});
    }
  return cases;
}

/// adamw_step over parameters of several shapes, each with its own weight decay, three steps: each
/// w, m and v, and each gradient zeroed by the step.
std::vector<op_case> adamw_step_cases(std::mt19937& rng) {
  const std::vector<shape_t> shapes = {{64, 3, 3, 3}, {64}, {10, 64}, {5000}, {1}};
  std::vector<tensor> inputs;  // per parameter: w, m, v, grad
  for (const shape_t& s : shapes) {
    inputs.push_back(random_host(s, rng));
    inputs.push_back(tensor::zeros(s));
    inputs.push_back(tensor::zeros(s));
    inputs.push_back(random_host(s, rng));
  }
  adamw_update_params p;
  p.lr = 2e-3f;
  p.grad_scale = 0.5f;
  return {{"adamw_step, three steps over " + std::to_string(shapes.size()) + " parameters",
           inputs,
           [p, count = shapes.size()](backend& be, std::vector<tensor>& in) {
             std::vector<adamw_target> targets;
             for (std::size_t i = 0; i < count; ++i)
               targets.push_back({&in[4 * i], &in[4 * i + 3], &in[4 * i + 1], &in[4 * i + 2],
                                  i % 2 ? 0.f : 0.05f * static_cast<float>(i + 1)});
             adamw_update_params at = p;
             for (int step = 0; step < 3; ++step, ++at.step) {
               be.adamw_step(targets, at);
               // The next step's gradients (the step zeroed them): each w, but the first
               // parameter's, which stays zero.
               for (std::size_t i = 1; i < count; ++i) be.add_inplace(in[4 * i + 3], in[4 * i]);
             }
             return op_result{in};
           },
           {parity::rounding}}};
}

}  // namespace

std::vector<op_case> dense_cases() {
  std::mt19937 rng(4);
  std::vector<op_case> cases = linear_cases(rng);
  for (op_case& c : loss_cases(rng)) cases.push_back(std::move(c));
  for (op_case& c : sgd_cases(rng)) cases.push_back(std::move(c));
  for (op_case& c : sgd_step_cases(rng)) cases.push_back(std::move(c));
  for (op_case& c : adamw_cases(rng)) cases.push_back(std::move(c));
  for (op_case& c : adamw_step_cases(rng)) cases.push_back(std::move(c));
  return cases;
}

}  // namespace petra::testing

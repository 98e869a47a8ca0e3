// The table's batch-norm cases: training forward with its saved statistics, the running update,
// evaluation and the backward accumulating into non-zero parameter gradients.
#include <cmath>

#include "tests/backends/op_table.hpp"
#include "tests/backends/parity_measures.hpp"

namespace petra::testing {

std::vector<op_case> batch_norm_cases() {
  std::vector<op_case> cases;
  std::mt19937 rng(2);
  const float eps = 1e-5f, momentum = 0.1f;
  for (const shape_t& shape :
       {shape_t{8, 6, 5, 5}, shape_t{16, 4, 1, 1}, shape_t{2, 3, 9, 7}, shape_t{4, 3, 5, 5}}) {
    const int64_t c = shape[1];
    tensor x = random_host(shape, rng, 2.f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 3.f;  // a mean far from 0
    const tensor gamma = random_host({c}, rng), beta = random_host({c}, rng);
    // Running statistics from a non-trivial start, a positive variance.
    const tensor running_mean = random_host({c}, rng);
    tensor running_var = random_host({c}, rng);
    for (int64_t i = 0; i < c; ++i) running_var.data()[i] = 1.f + std::abs(running_var.data()[i]);
    const tensor dy = random_host(shape, rng), dgamma = random_host({c}, rng), dbeta = random_host({c}, rng);
    const int64_t count = shape[0] * shape[2] * shape[3];
    cases.push_back(
        {"batch_norm_forward_train, update_running twice, forward_eval, backward twice: x " +
             to_string(shape),
         {x, gamma, beta, running_mean, running_var, dy, dgamma, dbeta},
         [=](backend& be, std::vector<tensor>& in) {
           batch_norm_saved saved;
           const tensor y = be.batch_norm_forward_train(in[0], in[1], in[2], eps, saved);
           for (int step = 0; step < 2; ++step)
             be.batch_norm_update_running(saved, count, eps, momentum, in[3], in[4]);
           const tensor y_eval = be.batch_norm_forward_eval(in[0], in[1], in[2], in[3], in[4], eps);
           tensor dx;
           for (int pass = 0; pass < 2; ++pass)
             dx = be.batch_norm_backward(in[0], in[1], saved, in[5], in[6], in[7]);
           // saved.inv_std is 1/sqrt(σ² + eps) on every backend, not 1/σ².
           return op_result{{y, saved.mean, saved.inv_std, in[3], in[4], y_eval, dx, in[6], in[7]}};
         },
         {parity::rounding}});
  }
  // Evaluation with running statistics of its own, not those of a training forward.
  const tensor x = random_host({4, 3, 5, 5}, rng), gamma = random_host({3}, rng),
               beta = random_host({3}, rng);
  const tensor mean = random_host({3}, rng);
  tensor var = random_host({3}, rng);
  for (int64_t i = 0; i < 3; ++i) var.data()[i] = 0.5f + std::abs(var.data()[i]);
  cases.push_back({"batch_norm_forward_eval: x " + to_string(x.shape()),
                   {x, gamma, beta, mean, var},
                   [eps](backend& be, std::vector<tensor>& in) {
                     return op_result{{be.batch_norm_forward_eval(in[0], in[1], in[2], in[3], in[4], eps)}};
                   },
                   {parity::rounding}});
  return cases;
}

}  // namespace petra::testing

// The table's pointwise, pooling and channel cases.
#include "tests/backends/op_table.hpp"
#include "tests/backends/parity_measures.hpp"

namespace petra::testing {

std::vector<op_case> elementwise_cases() {
  std::vector<op_case> cases;
  std::mt19937 rng(3);
  for (const shape_t& shape : {shape_t{5, 3, 7, 9}, shape_t{2, 6, 6, 4}}) {
    const tensor a = random_host(shape, rng), b = random_host(shape, rng);
    cases.push_back({"relu_forward, relu_backward, add, sub, add_inplace: " + to_string(shape),
                     {a, b},
                     [](backend& be, std::vector<tensor>& in) {
                       const tensor y = be.relu_forward(in[0]);
                       const tensor dx = be.relu_backward(y, in[1]);
                       const tensor sum = be.add(in[0], in[1]), difference = be.sub(in[0], in[1]);
                       tensor acc = be.add(sum, difference);
                       be.add_inplace(acc, in[1]);
                       be.add_inplace(in[0], in[1]);
                       return op_result{{y, dx, sum, difference, acc, in[0]}};
                     },
                     {parity::exact}});
  }

  for (const shape_t& shape : {shape_t{3, 4, 6, 8}, shape_t{2, 6, 6, 4}}) {
    tensor x = random_host(shape, rng);
    for (int64_t i = 0; i < x.numel(); i += 3) x.data()[i] = 1.f;  // ties: the first maximum wins on all
    const tensor dy = random_host({shape[0], shape[1], shape[2] / 2, shape[3] / 2}, rng);
    const tensor dp = random_host({shape[0], shape[1]}, rng);
    cases.push_back(
        {"max_pool2x2_forward and backward (with ties): " + to_string(shape),
         {x, dy},
         [](backend& be, std::vector<tensor>& in) {
           return op_result{{be.max_pool2x2_forward(in[0]), be.max_pool2x2_backward(in[0], in[1])}};
         },
         {parity::exact}});
    cases.push_back(
        {"max_pool2x2_jvp (with ties): " + to_string(shape),
         {x, random_host(shape, rng)},
         [](backend& be, std::vector<tensor>& in) { return op_result{{be.max_pool2x2_jvp(in[0], in[1])}}; },
         {parity::exact}});
    cases.push_back(
        {"global_avg_pool_forward and backward: " + to_string(shape),
         {x, dp},
         [shape](backend& be, std::vector<tensor>& in) {
           return op_result{{be.global_avg_pool_forward(in[0]), be.global_avg_pool_backward(in[1], shape)}};
         },
         {parity::rounding}});
  }

  for (const shape_t& shape : {shape_t{3, 8, 5, 5}, shape_t{4, 2, 1, 1}, shape_t{2, 6, 6, 4}}) {
    // concat(split(x)) is x itself; the swapped halves check which half is which.
    cases.push_back({"split_channels, concat_channels: " + to_string(shape),
                     {random_host(shape, rng)},
                     [](backend& be, std::vector<tensor>& in) {
                       auto [first, second] = be.split_channels(in[0]);
                       return op_result{{first, second, be.concat_channels(first, second),
                                         be.concat_channels(second, first), in[0]}};
                     },
                     {parity::exact}});
  }
  return cases;
}

}  // namespace petra::testing

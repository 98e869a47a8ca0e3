// The op table: every family's cases, in one list.
#include "tests/backends/op_table.hpp"

namespace petra::testing {

std::vector<op_case> op_table() {
  std::vector<op_case> table;
  for (auto family :
       {memory_cases, convolution_cases, batch_norm_cases, elementwise_cases, dense_cases, token_cases})
    for (op_case& c : family()) table.push_back(std::move(c));
  return table;
}

}  // namespace petra::testing

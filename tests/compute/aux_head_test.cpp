// The auxiliary head: its backward and its forward mode against finite differences.
#include "compute/blocks/aux_head.hpp"

#include <doctest/doctest.h>

#include "tests/compute/jvp_check.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("auxiliary head: shapes, parameters, backward and JVP against differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(61);
  aux_head_block aux(*be, "g1.b0.aux", 3, 5, 4, 17);
  const activation_shape out = aux.output_shape({{4, 3, 6, 6}, {4, 3, 6, 6}});
  CHECK(out.x1 == shape_t{4, 4});
  CHECK(out.x2.empty());
  std::vector<std::string> names;
  for (parameter* p : aux.parameters()) names.push_back(p->name);
  CHECK(names == std::vector<std::string>{"g1.b0.aux.conv1.weight", "g1.b0.aux.conv1.bias",
                                          "g1.b0.aux.bn1.weight", "g1.b0.aux.bn1.bias", "g1.b0.aux.fc.weight",
                                          "g1.b0.aux.fc.bias"});
  CHECK(aux.buffers().size() == 2);

  const activation x = random_activation({{4, 3, 6, 6}, {4, 3, 6, 6}}, rng);
  check_block_gradients(aux, x, rng);
  check_block_jvps(aux, x, rng);
}

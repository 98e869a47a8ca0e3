// A forward-gradient stage carries every tangent it receives through itself in one stacked JVP, its
// training forward: each tangent comes out as the stage's JVP along it alone would give, in order,
// under its own origin, and the output and running statistics are a plain forward's.
#include <doctest/doctest.h>

#include "compute/pipeline/forward_mode.hpp"
#include "tests/forward/stacked_check.hpp"
#include "tests/training/pipeline_fixture.hpp"
#include "training/forward_gradient_stage.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("a stage with 3 received tangents: one stacked pass = three JVPs alone, origins kept") {
  method_options m;
  m.kind = method_kind::forward_gradient;
  m.forward_gradient.aux_width = 6;
  optimizer_settings o;
  o.lr = 0.1;
  o.schedule = schedule_kind::constant;
  for (std::size_t j : {std::size_t{2}, std::size_t{3}, std::size_t{5}}) {  // coupling, downsampling, head
    CAPTURE(j);
    pipeline_fixture f(m, 0.1, 1);
    std::mt19937 rng(81);
    activation x{random_tensor({4, 1, 8, 8}, rng), {}};
    activation_shape in{{1, 1, 8, 8}, {}};
    for (std::size_t k = 0; k < j; ++k) {
      for (auto& b : f.stages[k]->blocks()) {
        x = b->forward(x, pass::recompute, nullptr);
        in = b->output_shape(in);
      }
    }
    stage& s = *f.stages[j];
    forward_gradient_stage fg(s, f.stages.size(), m.forward_gradient, small_spec().num_classes, o, 5, in);
    std::vector<stage_tangent> received;
    for (int32_t origin = 0; origin < 3; ++origin)
      received.push_back(
          {origin, {random_direction(x.x1.shape(), rng), random_direction(x.x2.shape(), rng)}});
    const std::vector<int32_t> labels{1, 2, 3, 4};
    const forward_gradient_stage::forward_result r = fg.forward(x, 0, 0, labels, received);
    const bool last = j + 1 == f.stages.size();
    REQUIRE(r.tangents.size() == (last ? 3u : 4u));  // before the last stage its own guess goes on too
    for (std::size_t g = 0; g < 3; ++g) {
      CAPTURE(g);
      CHECK(r.tangents[g].origin == static_cast<int32_t>(g));
      const activation alone = stage_jvp(s, x, received[g].direction, pass::recompute).second;
      check_groups(*f.be, r.tangents[g].direction, std::vector<activation>{alone}, match::close);
    }
    if (!last) CHECK(r.tangents[3].origin == static_cast<int32_t>(j));

    // The pass that carried them is the training forward: its output and the running statistics it
    // leaves are a plain forward's, bit for bit (updated once).
    pipeline_fixture twin(m, 0.1, 1);
    const activation z = twin.stages[j]->forward(x, 0, 0);
    check_groups(*f.be, r.z, std::vector<activation>{z}, match::bits);
    const std::vector<buffer_ref> mine = s.buffers(), plain = twin.stages[j]->buffers();
    REQUIRE(mine.size() == plain.size());
    for (std::size_t i = 0; i < mine.size(); ++i)
      CHECK(mine[i].value->to_vector() == plain[i].value->to_vector());
  }
}

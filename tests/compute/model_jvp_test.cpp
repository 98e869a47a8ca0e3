// The default preset's model (fashion_small) in forward mode: from every stage's output (one
// block per stage) to the loss, against central differences of the mean loss; and a stage's JVP.
#include <doctest/doctest.h>

#include "compute/models/revnet.hpp"
#include "compute/pipeline/forward_mode.hpp"
#include "compute/pipeline/stage.hpp"
#include "tests/compute/jvp_check.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// The mean loss of blocks[first, end) at x.
double loss_from(backend& be, const std::vector<std::unique_ptr<block>>& blocks, std::size_t first,
                 activation x, const std::vector<int32_t>& labels) {
  for (std::size_t i = first; i < blocks.size(); ++i) x = blocks[i]->forward(x, pass::recompute, nullptr);
  return be.softmax_cross_entropy(x.x1, labels, nullptr, nullptr);
}

}  // namespace

TEST_CASE("the default model's JVP from each stage's output to the loss matches differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(51);
  const revnet_spec spec = revnet_preset("fashion_small");
  const auto blocks = build_revnet(spec, *be, 3);
  const int64_t batch = 4;
  activation x = random_activation(input_shape(spec, batch), rng);
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < batch; ++i) labels.push_back(static_cast<int32_t>(rng() % spec.num_classes));

  for (std::size_t j = 0; j + 1 < blocks.size(); ++j) {
    x = blocks[j]->forward(x, pass::recompute, nullptr);  // stage j's output
    const activation x_dot = random_direction_of(x, rng);
    const loss_jvp result = loss_jvp_from(*be, blocks, j + 1, x, x_dot, labels, pass::recompute);
    CHECK(result.loss == doctest::Approx(loss_from(*be, blocks, j + 1, x, labels)).epsilon(1e-6));
    INFO("from the output of block " << j << " (" << blocks[j]->kind() << ")");
    check_directional_derivative(
        [&](double s) { return loss_from(*be, blocks, j + 1, step_along(x, s, x_dot), labels); },
        result.mean());

    if (j == 3) {  // and along the tail's parameters as well
      parameter_tangents theta_dot;
      std::vector<std::pair<parameter*, tensor>> directions;
      for (std::size_t i = j + 1; i < blocks.size(); ++i)
        for (parameter* p : blocks[i]->parameters()) {
          directions.emplace_back(p, random_direction(p->value.shape(), rng));
          theta_dot.set(*p, directions.back().second);
        }
      const loss_jvp both = loss_jvp_from(*be, blocks, j + 1, x, x_dot, labels, pass::recompute, theta_dot);
      INFO("with parameter tangents");
      check_directional_derivative(
          [&](double s) {
            std::vector<tensor> saved;
            for (auto& [p, v] : directions) saved.push_back(p->value), p->value = axpy(p->value, s, v);
            const double loss = loss_from(*be, blocks, j + 1, step_along(x, s, x_dot), labels);
            for (std::size_t i = 0; i < directions.size(); ++i) directions[i].first->value = saved[i];
            return loss;
          },
          both.mean());
    }
  }
}

TEST_CASE("a stage's JVP is its blocks' JVPs in order") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(52);
  const revnet_spec spec = revnet_preset("tiny");
  auto for_stage = build_revnet(spec, *be, 5);
  const auto reference = build_revnet(spec, *be, 5);
  activation x =
      reference[0]->forward(random_activation(input_shape(spec, 4), rng), pass::recompute, nullptr);
  std::vector<std::unique_ptr<block>> stage_blocks;
  stage_blocks.push_back(std::move(for_stage[1]));
  stage_blocks.push_back(std::move(for_stage[2]));
  stage s(1, std::move(stage_blocks), *be, optimizer_settings{}, stage_options{});

  const activation x_dot = random_direction_of(x, rng);
  const auto [y, y_dot] = stage_jvp(s, x, x_dot, pass::recompute);
  const auto [y_ref, y_dot_ref] = jvp_through(reference, 1, 3, x, x_dot, pass::recompute);
  CHECK(y.x1.to_vector() == y_ref.x1.to_vector());
  CHECK(y_dot.x1.to_vector() == y_dot_ref.x1.to_vector());
  CHECK(y_dot.x2.to_vector() == y_dot_ref.x2.to_vector());
  CHECK_THROWS_AS(jvp_through(reference, 2, 9, x, x_dot, pass::recompute), std::invalid_argument);
}

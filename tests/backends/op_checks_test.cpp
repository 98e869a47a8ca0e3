// The backend interface checks each op's arguments once, for every backend: a bad call reads the
// same on the CPU and on a sim device (and on a GPU, by the same code), naming the op, the tensor,
// its shape and what was expected.
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "compute/backend_factory.hpp"
#include "compute/sim/sim_devices.hpp"

using namespace petra;

TEST_CASE("a bad argument is refused with the same message by the CPU and a sim backend") {
  backend_options options;
  options.sim = std::make_shared<sim_devices>();
  for (const device& where : {device{}, device{device_type::sim, 0}}) {
    auto be = make_backend(where, options);
    INFO(be->name());
    // A tensor that claims cuda:0 (no memory behind it: only its device is looked at).
    const tensor on_gpu({2, 3},
                        std::make_shared<storage>(nullptr, 24, device{device_type::cuda, 0}, nullptr));
    const std::string expected = "relu_forward: x (2, 3) lives on cuda:0, not on " + where.str();
    CHECK_THROWS_WITH_AS(be->relu_forward(on_gpu), doctest::Contains(expected.c_str()),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->relu_forward(on_gpu), doctest::Contains("the hand-over is missing"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->conv2d_forward(be->zeros({2, 3}), be->zeros({4, 3, 3, 3}), {}, {1, 1}),
                         doctest::Contains("conv2d_forward: x (2, 3) has rank 2, expected (N, C, H, W)"),
                         std::invalid_argument);
    batch_norm_saved saved;
    CHECK_THROWS_WITH_AS(
        be->batch_norm_forward_train(be->zeros({2, 4, 3, 3}), be->zeros({6}), be->zeros({4}), 1e-5f, saved),
        doctest::Contains("gamma (6) has 6 entries but x's channels has 4"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->add(be->zeros({2, 3}), be->zeros({3, 2})),
                         doctest::Contains("add: a (2, 3) and b (3, 2) must have the same shape"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->export_for(on_gpu, device{}), doctest::Contains("only the backend that made it"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->from_host(on_gpu), doctest::Contains("lives on cuda:0, not on the host"),
                         std::invalid_argument);
  }
}

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

TEST_CASE("sgd_step refuses a target without its tensors, a tensor stepped twice, and bad shapes") {
  backend_options options;
  options.sim = std::make_shared<sim_devices>();
  for (const device& where : {device{}, device{device_type::sim, 0}}) {
    auto be = make_backend(where, options);
    INFO(be->name());
    tensor w = be->zeros({4, 3}), g = be->zeros({4, 3}), m = be->zeros({4, 3});
    tensor w2 = be->zeros({5}), g2 = be->zeros({5}), m2 = be->zeros({5}), wrong = be->zeros({3, 4});
    const sgd_update_params p{0.1f, 0.9f, 0.f, true, 1.f};
    CHECK_THROWS_WITH_AS(be->sgd_step({{&w, &g, nullptr, 0.f}}, p),
                         doctest::Contains("sgd_step: targets[0] lacks a tensor"), std::invalid_argument);
    tensor g3 = be->zeros({4, 3}), m3 = be->zeros({4, 3});
    CHECK_THROWS_WITH_AS(be->sgd_step({{&w, &g, &m, 0.f}, {&w, &g3, &m3, 0.f}}, p),
                         doctest::Contains("targets[1] shares a tensor with an earlier target"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->sgd_step({{&w2, &g2, &m2, 0.f}, {&w, &wrong, &m, 0.f}}, p),
                         doctest::Contains("sgd_step: grad (3, 4) and w (4, 3) must have the same shape"),
                         std::invalid_argument);
    // Without momentum the buffers are not read: one shared (or undefined) buffer is fine.
    tensor none;
    const sgd_update_params plain{0.1f, 0.f, 0.f, false, 1.f};
    CHECK_NOTHROW(be->sgd_step({{&w, &g, &none, 0.f}, {&w2, &g2, &none, 0.f}}, plain));
  }
}

TEST_CASE("adamw_step refuses a target without its tensors, a tensor stepped twice, and bad settings") {
  backend_options options;
  options.sim = std::make_shared<sim_devices>();
  for (const device& where : {device{}, device{device_type::sim, 0}}) {
    auto be = make_backend(where, options);
    INFO(be->name());
    tensor w = be->zeros({4, 3}), g = be->zeros({4, 3}), m = be->zeros({4, 3}), v = be->zeros({4, 3});
    tensor g2 = be->zeros({4, 3}), m2 = be->zeros({4, 3}), v2 = be->zeros({4, 3}), wrong = be->zeros({3, 4});
    adamw_update_params p;
    p.lr = 1e-3f;
    CHECK_THROWS_WITH_AS(be->adamw_step({{&w, &g, &m, nullptr, 0.f}}, p),
                         doctest::Contains("adamw_step: targets[0] lacks a tensor"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->adamw_step({{&w, &g, &m, &v, 0.f}, {&w, &g2, &m2, &v2, 0.f}}, p),
                         doctest::Contains("targets[1] shares a tensor with an earlier target"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->adamw_step({{&w, &g, &m, &m, 0.f}}, p),
                         doctest::Contains("targets[0] shares a tensor"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(be->adamw_step({{&w, &g, &m, &wrong, 0.f}}, p),
                         doctest::Contains("adamw_step: v (3, 4) and w (4, 3) must have the same shape"),
                         std::invalid_argument);
    tensor undefined;
    CHECK_THROWS_WITH_AS(be->adamw_update(w, g, m, undefined, p), doctest::Contains("v is undefined"),
                         std::invalid_argument);
    adamw_update_params bad = p;
    bad.beta2 = 1.f;
    CHECK_THROWS_WITH_AS(be->adamw_update(w, g, m, v, bad), doctest::Contains("beta2 = 1.0"),
                         std::invalid_argument);
    bad = p;
    bad.eps = 0.f;
    CHECK_THROWS_WITH_AS(be->adamw_update(w, g, m, v, bad), doctest::Contains("eps = 0.0"),
                         std::invalid_argument);
    bad = p;
    bad.step = 0;
    CHECK_THROWS_WITH_AS(be->adamw_update(w, g, m, v, bad), doctest::Contains("step = 0 must be ≥ 1"),
                         std::invalid_argument);
  }
}

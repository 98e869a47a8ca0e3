// Learning-rate schedule, Goyal scaling, the AdamW optimizer and its state.
#include "compute/optimizer.hpp"

#include <doctest/doctest.h>

#include <map>

#include "compute/pipeline/stage_state.hpp"

using namespace petra;

TEST_CASE("Goyal scaling: base 0.1, micro-batch 64 gives 0.025 k") {
  CHECK(goyal_lr(0.1, 64, 1) == doctest::Approx(0.025));
  CHECK(goyal_lr(0.1, 64, 2) == doctest::Approx(0.05));
  CHECK(goyal_lr(0.1, 64, 32) == doctest::Approx(0.8));
}

TEST_CASE("linear warm-up, then cosine to 0") {
  optimizer_settings s;
  s.lr = 0.05;
  s.warmup_steps = 10;
  s.total_steps = 110;
  s.schedule = schedule_kind::cosine;
  CHECK(learning_rate(s, 0) == doctest::Approx(0.005));
  CHECK(learning_rate(s, 9) == doctest::Approx(0.05));
  CHECK(learning_rate(s, 10) == doctest::Approx(0.05));
  CHECK(learning_rate(s, 60) == doctest::Approx(0.025));
  CHECK(learning_rate(s, 110) == doctest::Approx(0.0));
  for (int64_t i = 11; i <= 110; ++i) CHECK(learning_rate(s, i) <= learning_rate(s, i - 1));
}

TEST_CASE("step schedule multiplies by gamma at each milestone") {
  optimizer_settings s;
  s.lr = 0.1;
  s.schedule = schedule_kind::step;
  s.milestones = {150, 225};
  CHECK(learning_rate(s, 149) == doctest::Approx(0.1));
  CHECK(learning_rate(s, 150) == doctest::Approx(0.01));
  CHECK(learning_rate(s, 225) == doctest::Approx(0.001));
}

namespace {

parameter make_param(backend& be, const std::string& name, std::vector<float> values, bool decay) {
  parameter p;
  p.name = name;
  const shape_t shape{static_cast<int64_t>(values.size())};
  p.value = be.from_host(tensor::from_vector(shape, values));
  p.grad = be.zeros(shape);
  p.momentum = be.zeros(shape);
  p.decay = decay;
  return p;
}

optimizer_settings adamw_settings() {
  optimizer_settings s;
  s.kind = optimizer_kind::adamw;
  s.lr = 0.01;
  s.weight_decay = 0.1;
  s.accumulation = 2;
  s.schedule = schedule_kind::constant;
  return s;
}

}  // namespace

TEST_CASE("AdamW optimizer: zero second moments, t = steps taken + 1, decay where the parameter has it") {
  auto be = make_cpu_backend(1);
  parameter weight = make_param(*be, "w", {1.f, -2.f}, true), bias = make_param(*be, "b", {0.5f}, false);
  param_optimizer opt(*be, adamw_settings(), {&weight, &bias});
  REQUIRE(weight.second_moment.defined());
  CHECK(weight.second_moment.shape() == weight.value.shape());
  CHECK(be->to_host(bias.second_moment).data()[0] == 0.f);

  // The same step by hand: adamw_update with grad scale 1/k, the parameter's own decay, t = 1.
  tensor w = be->zeros({2}), m = be->zeros({2}), v = be->zeros({2});
  be->copy(weight.value, w);
  const tensor g = be->from_host(tensor::from_vector({2}, {0.3f, -0.7f}));
  be->copy(g, weight.grad);
  be->fill_zero(bias.grad);
  opt.step();
  adamw_update_params p;
  p.lr = 0.01f;
  p.weight_decay = 0.1f;
  p.grad_scale = 0.5f;
  p.step = 1;
  be->adamw_update(w, g, m, v, p);
  CHECK(be->to_host(weight.value).data()[0] == be->to_host(w).data()[0]);
  CHECK(be->to_host(weight.value).data()[1] == be->to_host(w).data()[1]);
  CHECK(be->to_host(weight.grad).data()[0] == 0.f);  // zeroed by the step
  CHECK(be->to_host(bias.value).data()[0] == 0.5f);  // zero gradient, no decay: unchanged
  CHECK(opt.steps_taken() == 1);

  // Restored at 9 steps taken: the next is t = 10 (the bias corrections continue).
  opt.set_steps_taken(9);
  be->copy(g, weight.grad);
  opt.step();
  p.step = 10;
  be->adamw_update(w, g, m, v, p);
  CHECK(be->to_host(weight.value).data()[0] == be->to_host(w).data()[0]);
  CHECK(be->to_host(weight.momentum).data()[1] == be->to_host(m).data()[1]);
  CHECK(be->to_host(weight.second_moment).data()[1] == be->to_host(v).data()[1]);
}

TEST_CASE("SGD gives no second moment, and a snapshot of one optimizer does not restore into the other") {
  auto be = make_cpu_backend(1);
  parameter sgd_param = make_param(*be, "w", {1.f}, true), adam_param = make_param(*be, "w", {1.f}, true);
  param_optimizer sgd(*be, optimizer_settings{}, {&sgd_param});
  param_optimizer adamw(*be, adamw_settings(), {&adam_param});
  CHECK_FALSE(sgd_param.second_moment.defined());

  std::vector<named_tensor> sgd_state, adamw_state;
  save_optimizer_state({&sgd_param}, *be, "", sgd_state);
  save_optimizer_state({&adam_param}, *be, "aux/", adamw_state);
  REQUIRE(sgd_state.size() == 1);
  REQUIRE(adamw_state.size() == 2);
  CHECK(adamw_state[1].name == "aux/second_moment/w");
  auto names_of = [](const std::vector<named_tensor>& state) {
    std::map<std::string, const tensor*> names;
    for (const named_tensor& t : state) names[t.name] = &t.value;
    return names;
  };
  std::vector<std::string> restored;
  auto note = [&](const std::string& name, tensor&) { restored.push_back(name); };
  CHECK_THROWS_WITH_AS(restore_optimizer_state({&adam_param}, "", names_of(sgd_state), note),
                       doctest::Contains("'second_moment/w' is missing: the checkpoint was written with "
                                         "training.optimizer.kind sgd and this run trains with adamw"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(
      restore_optimizer_state({&sgd_param}, "aux/", names_of(adamw_state), note),
      doctest::Contains("written with training.optimizer.kind adamw and this run trains with sgd"),
      std::runtime_error);
  restore_optimizer_state({&adam_param}, "aux/", names_of(adamw_state), note);
  CHECK(restored == std::vector<std::string>{"aux/momentum/w", "aux/second_moment/w"});
}

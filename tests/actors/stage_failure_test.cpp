// A stage that throws: the coordinator receives a failure_report with the stage and the tick.
#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "actors/caf_config.hpp"
#include "actors/stage_actor.hpp"
#include "messages/errors.hpp"
#include "tests/probe_block.hpp"

using namespace petra;
using namespace petra::messages;
using namespace petra::atoms;

namespace {}  // namespace

TEST_CASE("a stage that throws reports its stage and tick to the coordinator, then stops") {
  caf_config cfg(2);
  caf::actor_system sys(cfg);
  caf::scoped_actor coordinator(sys);
  auto device = std::shared_ptr<backend>(make_cpu_backend(1));
  std::vector<std::unique_ptr<block>> blocks;
  // A block whose third forward fails, as a real op would on bad data.
  blocks.push_back(std::make_unique<testing::probe_block>("failing", [forwards = 0]() mutable {
    if (++forwards == 3) throw std::runtime_error("conv2d_forward: simulated failure");
  }));
  auto compute =
      std::make_shared<stage>(0, std::move(blocks), *device, optimizer_settings{}, stage_options{});
  auto s = spawn_stage_actor(sys, stage_context{device, compute, 0, config::runtime_mode::lockstep});
  coordinator->monitor(s);
  const caf::actor me = caf::actor_cast<caf::actor>(coordinator);
  stage_links links;
  links.next = caf::actor_cast<forward_sink>(me);
  links.loader = caf::actor_cast<loader_actor>(me);
  links.coordinator = caf::actor_cast<coordinator_actor>(me);
  links.count = 2;
  coordinator->request(s, std::chrono::seconds(5), links)
      .receive([](wire_atom) {}, [&](caf::error& e) { FAIL(sys.render(e)); });
  coordinator->request(s, std::chrono::seconds(5), plan_atom_v, phase_plan{1, 8, 10, 0})
      .receive([](plan_atom) {}, [&](caf::error& e) { FAIL(sys.render(e)); });
  for (int64_t t = 0; t < 6; ++t) {
    coordinator->send(s, forward_data{stamp{t, t, 0, -1}, activation{tensor::zeros({2, 1, 4, 4}), {}}});
    if (t > 0) coordinator->send(s, backward_data{stamp{-1, t, 0, 1}, {}, {}});
  }
  bool reported = false, down = false;
  for (int i = 0; i < 40 && !(reported && down); ++i) {
    coordinator->receive(
        [&](failure_report& f) {
          reported = true;
          CHECK(f.stage == 0);
          CHECK(f.tick == 2);
          CHECK(f.what.find("simulated failure") != std::string::npos);
          CHECK(f.code == static_cast<uint8_t>(petra_errc::stage_exception));
        },
        [&](caf::down_msg& d) {
          down = true;
          CHECK(has_code(d.reason, petra_errc::stage_exception));
        },
        [](forward_data&) {}, [](credit_return&) {}, [](fault_event&) {},
        caf::after(std::chrono::seconds(5)) >> [&] { FAIL("no failure report within 5 s"); });
  }
  CHECK(reported);
  CHECK(down);
}

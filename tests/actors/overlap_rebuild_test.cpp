// runtime.overlap_rebuild changes when a reversible stage's rebuilds run, never what they compute:
// whole lockstep runs of ci_smoke with it on and off end with the same weights, bit for bit.
#include <doctest/doctest.h>

#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// ci_smoke (the tiny model, 32 micro-batches of 32) in lockstep, with its two couplings in one stage.
config::run_config smoke(bool overlap, const std::vector<std::string>& devices) {
  config::run_config c = config::load_config("ci_smoke");
  c.runtime.mode = config::runtime_mode::lockstep;
  c.pipeline.stage_blocks = {1, 2, 1, 1};  // stem | g1.b0 g1.b1 | g2.b0 | head
  c.pipeline.threads = {1, 2, 1, 1};       // the couplings' stage on two threads
  for (const std::string& d : devices) c.pipeline.devices.push_back(config::parse_device(d));
  c.runtime.overlap_rebuild = overlap;
  return c;
}

}  // namespace

TEST_CASE("lockstep ci_smoke: overlap_rebuild true and false end bit-identical (CPU, and the simulator)") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained plain = train_once(smoke(false, {}));
  // The rebuild on the stage's own count of threads (the default, 2 here) and on one.
  for (int threads : {0, 1}) {
    CAPTURE(threads);
    config::run_config c = smoke(true, {});
    c.runtime.overlap_rebuild_threads = threads;
    CHECK(differing(plain, train_once(c)) == 0);
  }
  config::run_config simulated = smoke(true, {});
  simulated.runtime.mode = config::runtime_mode::simulate;
  CHECK(differing(plain, train_once(simulated)) == 0);
}

TEST_CASE("lockstep ci_smoke on simulated devices: overlap_rebuild true and false end bit-identical") {
  PETRA_REQUIRE_FASHION_MNIST();
  const std::vector<std::string> devices = {"cpu", "sim:0", "sim:1", "cpu"};
  const trained plain = train_once(smoke(false, devices));
  config::run_config slow = smoke(true, devices);
  slow.runtime.sim_latency_us = 100;  // a missing wait between the two streams would show
  CHECK(differing(plain, train_once(slow)) == 0);
}

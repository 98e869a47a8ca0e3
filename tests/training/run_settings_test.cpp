// What a run's settings become where the run is not the one that set them: the trace window fitted
// to the run's length, and the config an evaluation of any run directory uses.
#include <doctest/doctest.h>

#include "config/config.hpp"
#include "training/runtime_support.hpp"
#include "training/trace_window.hpp"

using namespace petra;

namespace {

config::run_config traced(const std::string& output_yaml, const std::vector<std::string>& sets = {}) {
  return config::parse_config("model: {arch: tiny}\noutput:\n  trace: true\n" + output_yaml, "run.yaml",
                              sets);
}

}  // namespace

TEST_CASE("trace window: the default fits a shorter run, its last 200 micro-batches or all of them") {
  const config::run_config c = traced("");
  const trace_window long_run = fit_trace_window(c, 1000);
  CHECK(long_run.first == 200);
  CHECK(long_run.last == 399);
  CHECK(long_run.fitted.empty());
  const trace_window shorter = fit_trace_window(c, 300);
  CHECK(shorter.first == 100);
  CHECK(shorter.last == 299);
  CHECK(shorter.fitted ==
        "the run's last 200: output.trace_steps [200, 399] ends beyond its 300 micro-batches");
  const trace_window tiny = fit_trace_window(c, 32);
  CHECK(tiny.first == 0);
  CHECK(tiny.last == 31);
  CHECK(describe(tiny) ==
        "micro-batches 0-31 of the run (the whole run: output.trace_steps [200, 399] ends beyond its 32 "
        "micro-batches)");
  // A config.yaml petra wrote names every key: its default window still fits the run.
  const trace_window written = fit_trace_window(traced("  trace_steps: [200, 399]\n"), 32);
  CHECK(written.first == 0);
  CHECK(written.last == 31);
}

TEST_CASE("trace window: one set explicitly is kept, cut at the run's end, or refused at its place") {
  const trace_window inside = fit_trace_window(traced("  trace_steps: [3, 9]\n"), 32);
  CHECK(inside.first == 3);
  CHECK(inside.last == 9);
  CHECK(inside.fitted.empty());
  const trace_window cut = fit_trace_window(traced("  trace_steps: [20, 99]\n"), 32);
  CHECK(cut.first == 20);
  CHECK(cut.last == 31);
  CHECK(cut.fitted == "output.trace_steps [20, 99] cut at the run's end: it has 32 micro-batches");
  CHECK_THROWS_WITH_AS(
      fit_trace_window(traced("  trace_steps: [40, 60]\n"), 32),
      doctest::Contains("output.trace_steps at run.yaml:4: [40, 60] starts after the run's end "
                        "(it has 32 micro-batches, 0-31)"),
      config::config_error);
  CHECK_THROWS_WITH_AS(fit_trace_window(traced("", {"output.trace_steps=[32,40]"}), 32),
                       doctest::Contains("output.trace_steps in --set output.trace_steps=[32,40]"),
                       config::config_error);
}

TEST_CASE("evaluation config: a run trained with every training-only setting evaluates on simulate") {
  config::run_config c = config::parse_config(
      "model: {arch: tiny}\n"
      "pipeline: {devices: [sim:0, sim:1, cpu, cpu, cpu], nodes: [local, 127.0.0.1:4000, local, local, "
      "local],\n"
      "           spare_nodes: [127.0.0.1:4001], migrate: ['8:2>sim:0']}\n"
      "runtime: {mode: async, credits: 6, pacing: loader}\n"
      "faults: {forward_delay: [0, 2], backward_delay: [1], jitter_ms: [0, 1], drop: [0.1], duplicate: "
      "[0.1],\n"
      "         reorder: [0.1], slow: [1, 2], crash_at_tick: [-1, 5], kill_node: ['127.0.0.1:4000@3']}\n"
      "output: {trace: true, trace_steps: [0, 9]}\n",
      "run.yaml");
  REQUIRE_THROWS_AS(check_runtime_supports([&] {
                      config::run_config simulated = c;
                      simulated.runtime.mode = config::runtime_mode::simulate;
                      return simulated;
                    }()),
                    config::config_error);
  const config::run_config e = for_evaluation(c);
  CHECK_NOTHROW(check_runtime_supports(e));
  CHECK(e.runtime.mode == config::runtime_mode::simulate);
  CHECK(e.pipeline.devices.empty());
  CHECK(e.pipeline.migrate.empty());
  CHECK(!e.output.trace);
  // What the evaluation is about stays: the model and the data.
  CHECK(e.model.arch == c.model.arch);
  CHECK(e.data.path == c.data.path);
  CHECK(e.data.test_limit == c.data.test_limit);
}

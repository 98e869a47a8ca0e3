// The records of metrics.jsonl: what a writer writes, the reader reads back as the same record;
// fields a stage has no value for are null or left out, as docs/outputs.md says.
#include "training/metrics_records.hpp"

#include <doctest/doctest.h>

#include "training/step_lines.hpp"

namespace {

petra::stage_report sample_report() {
  petra::stage_report r;
  r.stage = 1;
  r.weight_version = 12;
  r.stats.forwards = 24;
  r.stats.backwards = 24;
  r.stats.delay_ticks = {{4, 24}};
  r.stats.staleness_steps = {{1, 2}, {2, 22}};
  r.stats.fifo_peak = 5;
  r.stats.inversion_samples = 4;
  r.stats.inversion_error_sum = 0.5;
  r.stats.inversion_error_max = 0.25;
  r.busy_seconds = 1.5;
  r.wall_seconds = 3.0;
  return r;
}

}  // namespace

TEST_CASE("metrics records: a stage line reads back as the record it was written from") {
  petra::config::run_config c;
  c.training.accumulation = 2;
  const petra::stage_record written = petra::stage_line(sample_report(), petra::fault_counts{}, c, 4);
  const nlohmann::json line = petra::json_record::write(written);
  CHECK(line.at("staleness_steps") == nlohmann::json{{"1", 2}, {"2", 22}});  // {"value": count}
  CHECK(line.at("expected_staleness_steps") == 2.0);  // 2(J−j)/k, stage 2 of 4, k = 2
  CHECK_FALSE(line.contains("injected_drops"));       // no fault injected
  CHECK(line.at("inversion_error_mean") == 0.125);
  const auto read = petra::json_record::read<petra::stage_record>(line, "line 1");
  CHECK(read.stage == 2);
  CHECK(read.staleness_steps == written.staleness_steps);
  CHECK(read.delay_ticks == written.delay_ticks);
  CHECK(read.busy_fraction == written.busy_fraction);
  CHECK(read.fifo_peak == written.fifo_peak);
  CHECK(read.inversion_error_max == written.inversion_error_max);
  CHECK_FALSE(read.injected_drops.has_value());
  CHECK(petra::json_record::write(read) == line);

  c.runtime.mode = petra::config::runtime_mode::async;  // no fixed delay: the expectations are null
  const nlohmann::json async_line = petra::json_record::write(petra::stage_line(sample_report(), {}, c, 4));
  CHECK(async_line.at("expected_delay_ticks").is_null());
  CHECK(async_line.at("expected_staleness_steps").is_null());
}

TEST_CASE("metrics records: a step line with a stage that sampled nothing writes null and reads it back") {
  petra::step_record written;
  written.epoch = 2;
  written.step = 40;
  written.micro_batches = 80;
  written.loss = 1.25;
  written.stages = {{1, 3.0, std::nullopt}, {2, 1.0, 0.001}};
  const nlohmann::json line = petra::json_record::write(written);
  CHECK(line.at("event") == "step");
  CHECK(line.at("stages").at(0).at("inversion_error_mean").is_null());
  const auto read = petra::json_record::read<petra::step_record>(line);
  CHECK(read.step == 40);
  CHECK(read.micro_batches == 80);
  REQUIRE(read.stages.size() == 2);
  CHECK_FALSE(read.stages[0].inversion_error_mean.has_value());
  CHECK(read.stages[1].inversion_error_mean == 0.001);
  nlohmann::json bad = line;
  bad["stages"][1]["staleness_mean"] = "x";
  CHECK_THROWS_WITH(petra::json_record::read<petra::step_record>(bad, "line 3"),
                    "line 3, stage 2: \"staleness_mean\" must be a number, got \"x\"");
}

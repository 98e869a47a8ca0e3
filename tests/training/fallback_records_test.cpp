// The fallback's record: its counts in the epoch lines (only where it may act), summed over a
// period, kept by a snapshot's stage record; and a snapshot part carrying its mode, its window and
// what each outstanding forward kept.
#include <doctest/doctest.h>

#include <cmath>

#include "training/report_codec.hpp"
#include "training/snapshot.hpp"
#include "training/stage_metrics.hpp"

using namespace petra;

namespace {

stage_report rebuilding_stage() {
  stage_report r;
  r.stage = 1;
  r.stats.forwards = 40;
  r.stats.backwards = 40;
  r.stats.inversion_samples = 10;
  r.stats.inversion_error_sum = 0.5;
  r.stats.inversion_error_max = 0.1;
  r.stats.fallback_forwards = 12;
  r.stats.fallback_switches = 3;
  return r;
}

}  // namespace

TEST_CASE("fallback counts: in a stage line where the fallback is on and the stage rebuilds, else absent") {
  config::run_config c;
  const nlohmann::json off = json_record::write(stage_line(rebuilding_stage(), {}, c, 4));
  CHECK_FALSE(off.contains("fallback_forwards"));
  CHECK_FALSE(off.contains("fallback_switches"));

  c.training.max_inversion_error = 0.05;
  const nlohmann::json on = json_record::write(stage_line(rebuilding_stage(), {}, c, 4));
  CHECK(on.at("fallback_forwards") == 12);
  CHECK(on.at("fallback_switches") == 3);
  const auto read = json_record::read<stage_record>(on, "line 1");
  CHECK(read.fallback_forwards == 12);
  CHECK(json_record::write(read) == on);

  stage_report kept_inputs;  // a non-reversible stage: never sampled, never falls back
  kept_inputs.stats.forwards = 40;
  CHECK_FALSE(json_record::write(stage_line(kept_inputs, {}, c, 4)).contains("fallback_forwards"));
}

TEST_CASE("fallback counts: periods add up, and a snapshot's stage record keeps them") {
  stage_report total = rebuilding_stage();
  merge(total, rebuilding_stage());
  CHECK(total.stats.fallback_forwards == 24);
  CHECK(total.stats.fallback_switches == 6);

  const stage_stats back = stats_from_json(stats_to_json(total.stats));
  CHECK(back.fallback_forwards == 24);
  CHECK(back.fallback_switches == 6);
  nlohmann::json older = stats_to_json(total.stats);  // a snapshot written before the fallback
  older.erase("fallback_forwards");
  older.erase("fallback_switches");
  CHECK(stats_from_json(older).fallback_forwards == 0);
}

TEST_CASE("snapshot part: the fallback's mode and window, and what each outstanding forward kept") {
  stage_cut c;
  c.state.stage = 2;
  tensor x = tensor::empty({2, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = static_cast<float>(i) / 3;
  c.inflight.outstanding.push_back({7, 3, 14, activation{x, x}, true});   // kept
  c.inflight.outstanding.push_back({8, 3, 15, activation{x, x}, false});  // a sample only
  c.inflight.outstanding.push_back({9, 4, 16, activation{}, false});      // rebuilds
  c.inflight.fallback.keeping = true;
  c.inflight.fallback.window = {0.1 + 0.2, 1e-300, 0.07};
  const encoded_stage_cut e = encode_stage_cut(c);
  const stage_cut d = decode_stage_cut(e.tensors, e.meta, 2, "stage 3");
  REQUIRE(d.inflight.outstanding.size() == 3);
  CHECK(d.inflight.outstanding[0].kept);
  CHECK_FALSE(d.inflight.outstanding[1].kept);
  CHECK(d.inflight.outstanding[1].input.x1.defined());
  CHECK_FALSE(d.inflight.outstanding[2].kept);
  CHECK(d.inflight.fallback.keeping);
  CHECK(d.inflight.fallback.window == c.inflight.fallback.window);  // exactly

  // A diverged rebuild's error (NaN) is kept as one.
  c.inflight.fallback.window.push_back(std::nan(""));
  const encoded_stage_cut nan = encode_stage_cut(c);
  const auto window = decode_stage_cut(nan.tensors, nan.meta, 2, "stage 3").inflight.fallback.window;
  REQUIRE(window.size() == 4);
  CHECK(std::isnan(window[3]));

  // A part written before the fallback: no mode (rebuilding, an empty window), nothing kept by it.
  nlohmann::json meta = nlohmann::json::parse(e.meta);
  meta.erase("fallback");
  for (auto& entry : meta.at("outstanding")) entry.erase("kept");
  const stage_cut old = decode_stage_cut(e.tensors, meta.dump(), 2, "stage 3");
  CHECK_FALSE(old.inflight.fallback.keeping);
  CHECK(old.inflight.fallback.window.empty());
  CHECK_FALSE(old.inflight.outstanding[0].kept);
}

// Async runs whose epochs overlap (evaluation waves, no drain): a backprop stage takes its part of
// the epoch's snapshot once its live tape has ended, and an epoch's time is stage 1's own.
#include <doctest/doctest.h>

#include <filesystem>

#include "app/commands.hpp"
#include "tests/actors/metrics_lines.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

using petra::train_options;
using petra::app::train_command;
using petra::testing::event_lines;
using petra::testing::scratch_dir;

namespace {

/// `petra train tiny` in async for two epochs of 256 micro-batches, with `sets` on top.
std::filesystem::path train_async(const scratch_dir& out, const std::string& name,
                                  std::vector<std::string> sets) {
  train_options o;
  o.config = "tiny";
  o.sets = {"runtime.mode=async", "data.train_limit=2048", "data.test_limit=64",
            "training.epochs=2",  "output.progress=false", "output.dir=" + out.path.string(),
            "output.name=" + name};
  o.sets.insert(o.sets.end(), sets.begin(), sets.end());
  REQUIRE(train_command(o) == 0);
  return out.path / name;
}

}  // namespace

TEST_CASE("async backprop on one stage: the epoch's snapshot waits for the live tape, no stage fails") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  for (const char* blocks : {"[5]", "[1,2,1,1]"}) {
    CAPTURE(blocks);
    const auto run =
        train_async(out, std::string("backprop-") + (blocks[2] == ']' ? "1" : "4"),
                    {"training.method=backprop", std::string("pipeline.stage_blocks=") + blocks});
    CHECK(event_lines(run, "failure").empty());
    const auto epochs = event_lines(run, "epoch");
    REQUIRE(epochs.size() == 2);
    for (const auto& e : epochs)
      for (const auto& s : e["stages"]) CHECK(s["backwards"].get<int64_t>() == 256);
    const auto summary = event_lines(run, "summary");
    REQUIRE(summary.size() == 1);
    CHECK(summary[0]["micro_batches"]["local_recoveries"].get<int64_t>() == 0);
    CHECK(summary[0]["micro_batches"]["completed"].get<int64_t>() == 512);
  }
}

TEST_CASE(
    "async with evaluation waves: an epoch's time and images/s are stage 1's, not when its record "
    "completed") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  const auto run = train_async(out, "petra", {});
  const auto epochs = event_lines(run, "epoch");
  REQUIRE(epochs.size() == 2);
  for (const auto& e : epochs) {
    const auto& first = e["stages"][0];
    REQUIRE(first["busy_fraction"].get<double>() > 0);
    const double stage_wall = first["busy_seconds"].get<double>() / first["busy_fraction"].get<double>();
    const double seconds = e["epoch_seconds"].get<double>();
    CHECK(seconds == doctest::Approx(stage_wall).epsilon(1e-6));
    CHECK(e["images_per_s"].get<double>() == doctest::Approx(2048 / seconds).epsilon(1e-6));
  }
}

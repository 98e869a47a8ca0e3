// The stages' compute threads: the machine's cores split over the CPU stages by default, given
// counts kept, impossible ones refused, pinned cores consecutive per stage.
#include "training/stage_threads.hpp"

#include <doctest/doctest.h>

#include "config/config.hpp"
#include "training/setup.hpp"

using namespace petra;

namespace {

/// The default preset: fashion_small cut one block per stage, J = 8.
config::run_config preset(const std::vector<std::string>& sets = {}) {
  return config::load_config("default", sets);
}

std::vector<int> threads_of(const config::run_config& c, int cores) {
  std::vector<int> out;
  for (std::size_t j = 0; j < stage_sizes(c).size(); ++j) out.push_back(stage_threads(c, j, cores));
  return out;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("by default the cores are split evenly over the CPU stages, at least one each") {
  const auto c = preset();
  REQUIRE(stage_sizes(c).size() == 8);
  CHECK(threads_of(c, 16) == std::vector<int>(8, 2));
  CHECK(threads_of(c, 2) == std::vector<int>(8, 1));
  CHECK(threads_of(c, 20) == std::vector<int>(8, 2));  // 20 / 8: the rest stays free
  CHECK(threads_of(preset({"pipeline.stage_blocks=[4,4]"}), 16) == std::vector<int>{8, 8});
  CHECK(threads_of(preset({"pipeline.stage_blocks=[8]"}), 16) == std::vector<int>{16});
  // Stages on other devices get one host thread and leave the cores to the CPU stages.
  const auto mixed = preset({"pipeline.stage_blocks=[2,2,4]", "pipeline.devices=[cpu,sim:0,cpu]"});
  CHECK(threads_of(mixed, 16) == std::vector<int>{8, 1, 8});
}

TEST_CASE("pipeline.threads given: kept, and more than the cores on a stage of this process refused") {
  const auto c = preset({"pipeline.stage_blocks=[4,4]", "pipeline.threads=[3,5]"});
  CHECK(threads_of(c, 2) == std::vector<int>{3, 5});
  CHECK_NOTHROW(check_stage_threads(c, 5));
  try {
    check_stage_threads(c, 4);
    FAIL("5 threads on 4 cores were accepted");
  } catch (const config::config_error& e) {
    const std::string what = e.what();
    CHECK(what.find("pipeline.threads[1] = 5 (stage 2)") != std::string::npos);
    CHECK(what.find("4 cores") != std::string::npos);
  }
  // A stage on another node has that machine's cores: not refused here.
  const auto remote = preset(
      {"pipeline.stage_blocks=[4,4]", "pipeline.threads=[3,64]", "pipeline.nodes=[local,127.0.0.1:7001]"});
  CHECK_NOTHROW(check_stage_threads(remote, 4));
}

TEST_CASE("the start lines say the split, and warn when the stages ask for more threads than cores") {
  const auto lines = describe_stage_threads(preset(), 16);
  REQUIRE(lines.size() == 1);
  CHECK(mentions(lines, "8 CPU stages × 2 threads on 16 cores"));
  CHECK(mentions(lines, "pipeline.threads not set"));
  const auto shared = describe_stage_threads(preset(), 2);  // the default never warns: it is no one's ask
  REQUIRE(shared.size() == 1);
  CHECK(mentions(shared, "8 CPU stages × 1 thread on 2 cores"));
  CHECK(mentions(shared, "more threads than cores: the stages take turns on 2 scheduler threads"));
  const auto over =
      describe_stage_threads(preset({"pipeline.stage_blocks=[4,4]", "pipeline.threads=[2,2]"}), 2);
  REQUIRE(over.size() == 2);
  CHECK(mentions(over, "2 CPU stages × 2 threads on 2 cores (pipeline.threads)"));
  CHECK(mentions(over, "ask for 4 compute threads on 2 cores"));
}

TEST_CASE("pinned: the CPU stages take consecutive cores in stage order, wrapping around") {
  CHECK(stage_cores(preset(), 2, 16).empty());  // pinning is off by default
  const auto c = preset({"runtime.pin_threads=true"});
  CHECK(stage_cores(c, 0, 16) == std::vector<int>{0, 1});
  CHECK(stage_cores(c, 3, 16) == std::vector<int>{6, 7});
  const auto uneven = preset({"runtime.pin_threads=true", "pipeline.stage_blocks=[2,2,4]",
                              "pipeline.threads=[1,3,2]", "pipeline.devices=[cpu,cpu,cpu]"});
  CHECK(stage_cores(uneven, 1, 4) == std::vector<int>{1, 2, 3});
  CHECK(stage_cores(uneven, 2, 4) == std::vector<int>{0, 1});  // 4 and 5 wrap onto 0 and 1
  const auto mixed = preset({"runtime.pin_threads=true", "pipeline.stage_blocks=[2,2,4]",
                             "pipeline.devices=[cpu,sim:0,cpu]", "pipeline.threads=[2,1,2]"});
  CHECK(stage_cores(mixed, 1, 8).empty());
  CHECK(stage_cores(mixed, 2, 8) == std::vector<int>{2, 3});
}

TEST_CASE("the CPU stages own threads while they fit the cores, and take turns on the scheduler beyond") {
  // The default preset: 8 CPU stages, one thread each at least.
  CHECK_FALSE(stages_take_turns(preset(), 16));  // 8 × 2 threads on 16 cores
  CHECK_FALSE(stages_take_turns(preset(), 8));   // 8 × 1
  CHECK(stages_take_turns(preset(), 2));         // 8 × 1 on 2 cores
  CHECK(scheduler_threads(preset(), 16) == 2);   // runtime.threads: the loader, the loss, control
  CHECK(scheduler_threads(preset(), 2) == 2);
  CHECK(scheduler_threads(preset(), 4) == 4);  // taking turns: one stage per core at once
  CHECK(scheduler_threads(preset({"runtime.threads=6"}), 4) == 6);
  // Pinned stages own their threads whatever their count (pinning is asked per stage).
  CHECK_FALSE(stages_take_turns(preset({"runtime.pin_threads=true"}), 2));
  // pipeline.threads counts: 2 + 2 on 2 cores take turns, 1 + 1 fit.
  CHECK(stages_take_turns(preset({"pipeline.stage_blocks=[4,4]", "pipeline.threads=[2,2]"}), 2));
  CHECK_FALSE(stages_take_turns(preset({"pipeline.stage_blocks=[4,4]", "pipeline.threads=[1,1]"}), 2));
  // Device stages own their thread and count no CPU thread.
  const auto sim = preset({"pipeline.stage_blocks=[2,2,4]", "pipeline.devices=[sim:0,sim:1,cpu]"});
  CHECK_FALSE(stages_take_turns(sim, 2));
}

TEST_CASE("a petra node's scheduler has one thread per core unless --threads says otherwise") {
  // It starts before it knows its stages: where they take turns, one computes per scheduler thread.
  CHECK(node_scheduler_threads(0, 16) == 16);
  CHECK(node_scheduler_threads(0, 1) == 2);  // and the node's own actors beside a stage
  CHECK(node_scheduler_threads(3, 16) == 3);
}

TEST_CASE("the threads each stage runs on this process's cores: 0 for other devices and other processes") {
  CHECK(local_cpu_threads(preset(), 2) == std::vector<int>(8, 1));
  const auto mixed = preset({"pipeline.stage_blocks=[2,2,4]", "pipeline.devices=[cpu,sim:0,cpu]"});
  CHECK(local_cpu_threads(mixed, 16) == std::vector<int>{8, 0, 8});
  const auto remote = preset({"pipeline.stage_blocks=[4,4]", "pipeline.nodes=[local,127.0.0.1:7001]"});
  CHECK(local_cpu_threads(remote, 16) == std::vector<int>{8, 0});
}

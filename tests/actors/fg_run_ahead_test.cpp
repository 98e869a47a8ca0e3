// Greedy local learning (forward gradients, target local) sends nothing back, so nothing from
// downstream holds stage 1: the loader's credits come back from the last stage instead. Without that,
// stage 1 ran as far ahead of a slower stage as the data went, its messages piling up in that stage's
// mailbox (a lockstep run of the default preset grew by some 300 MB every 20 s and its slowest stage
// could not answer a status request within 10 s). Read from the timeline: stage 1 never starts a
// micro-batch before the last stage has finished the one 3J earlier (the loader's 2J − 1 credits
// and the J − 1 ticks of fill leave less than that).
#include <map>

#include "tests/actors/trace_checks.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("forward_gradient with a local target: stage 1 runs at most 3J micro-batches ahead of the last") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* mode : {"lockstep", "async"}) {
    CAPTURE(mode);
    run_here r;
    // tiny, J = 4, micro-batches of 8: 64 of them, all on the timeline; the last stage 4 times slower.
    const std::vector<std::string> sets = {std::string("runtime.mode=") + mode,
                                           "training.method=forward_gradient",
                                           "training.forward_gradient.target=local",
                                           "training.forward_gradient.aux_width=8",
                                           "training.epochs=1",
                                           "faults.slow=[1,1,1,4]",
                                           "output.trace=true",
                                           "output.trace_steps=[0,63]"};
    // run_here's own sets come after ours: override its micro-batch of 32 with a plain command.
    std::vector<std::string> all = sets;
    all.insert(all.end(), {"data.train_limit=512", "data.test_limit=64", "pipeline.stage_blocks=[1,2,1,1]",
                           "output.dir=" + r.root.string(), "output.name=ahead", "output.progress=false",
                           "training.micro_batch=8"});
    REQUIRE(app::train_command({"tiny", all, "", 0}) == 0);
    const nlohmann::json trace = r.trace("ahead");
    std::map<int, std::string> track_names;
    for (const auto& e : trace["traceEvents"])
      if (e["ph"] == "M" && e["name"] == "thread_name") track_names[e["tid"].get<int>()] = e["args"]["name"];
    std::map<int64_t, double> first_begins, last_ends;  // forward spans by micro-batch
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] != "X" || e["name"] != "forward") continue;
      const std::string& track = track_names[e["tid"].get<int>()];
      const auto id = e["args"]["micro_batch"].get<int64_t>();
      const double ts = e["ts"].get<double>();
      if (track == "stage 1") first_begins[id] = ts;
      if (track == "stage 4") last_ends[id] = ts + e["dur"].get<double>();
    }
    REQUIRE(first_begins.size() == 64);
    REQUIRE(last_ends.size() == 64);
    const int64_t ahead = 3 * 4;
    int checked = 0;
    for (const auto& [id, begin] : first_begins) {
      const auto earlier = last_ends.find(id - ahead);
      if (earlier == last_ends.end()) continue;
      CHECK_MESSAGE(begin >= earlier->second, "stage 1 began micro-batch "
                                                  << id << " before the last stage had "
                                                  << "finished micro-batch " << id - ahead);
      ++checked;
    }
    CHECK(checked == 64 - ahead);
  }
}

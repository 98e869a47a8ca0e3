// Stages on simulated devices (sim:N): every hand-over path of docs/design.md §5 — same device on
// another stream, device to device, device to CPU, device to another process — on the default
// preset, bit for bit against the all-CPU run and against the simulator on the same placement.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "compute/backend_factory.hpp"
#include "tests/actors/node_process.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;
namespace fs = std::filesystem;

namespace {

struct runs {
  fs::path root = fs::temp_directory_path() / ("petra-placement-" + std::to_string(::getpid()));
  runs() { fs::remove_all(root); }
  ~runs() { fs::remove_all(root); }

  /// Two epochs of 512 images of the default preset (J = 8) with these settings; the exit code.
  int train(const std::string& name, std::vector<std::string> sets) const {
    sets.insert(sets.end(), {"data.train_limit=512", "data.test_limit=128", "training.epochs=2",
                             "output.dir=" + root.string(), "output.name=" + name, "output.progress=false"});
    return app::train_command({"default", sets, "", 0});
  }
  trained weights(const std::string& name) const {
    trained t;
    t.weights = load_safetensors((root / name / "checkpoint.safetensors").string()).tensors;
    return t;
  }
  std::vector<nlohmann::json> epochs(const std::string& name) const {
    std::ifstream in(root / name / "metrics.jsonl");
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["event"] == "epoch") out.push_back(std::move(j));
    }
    return out;
  }
};

const std::vector<std::pair<std::string, std::string>> placements = {
    {"all-sim0", "[sim:0,sim:0,sim:0,sim:0,sim:0,sim:0,sim:0,sim:0]"},
    {"two-devices", "[sim:0,sim:0,sim:0,sim:0,sim:1,sim:1,sim:1,sim:1]"},
    {"mixed", "[cpu,sim:0,cpu,sim:1,cpu,sim:0,sim:0,cpu]"},
};

}  // namespace

TEST_CASE("lockstep and simulate on simulated devices equal the all-CPU run, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  runs r;
  REQUIRE(r.train("cpu", {"runtime.mode=lockstep"}) == 0);
  const trained reference = r.weights("cpu");
  for (const auto& [name, devices] : placements) {
    INFO(name << " " << devices);
    REQUIRE(r.train(name + "-lockstep", {"runtime.mode=lockstep", "pipeline.devices=" + devices}) == 0);
    REQUIRE(r.train(name + "-simulate", {"runtime.mode=simulate", "pipeline.devices=" + devices}) == 0);
    CHECK(differing(r.weights(name + "-lockstep"), reference) == 0);
    CHECK(differing(r.weights(name + "-simulate"), reference) == 0);
  }
}

TEST_CASE(
    "no tensor leaks: a drained pipeline on simulated devices holds the same device bytes after every "
    "phase") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const auto& [name, devices] : placements) {
    INFO(name << " " << devices);
    config::run_config c = config::load_config(
        "default", {"runtime.mode=lockstep", "pipeline.devices=" + devices, "data.train_limit=512",
                    "data.test_limit=64", "output.progress=false"});
    training_data data = load_training_data(c);
    const int64_t per_epoch = data.train_feed->micro_batches_per_epoch();
    auto runtime = make_runtime(c, data, optimizer_for(c.training, per_epoch / c.training.accumulation));
    const phase_result first = runtime->train(phase_request::of(1, 0, per_epoch), {});
    const phase_result second = runtime->train(phase_request::of(2, 0, per_epoch), {});
    for (std::size_t j = 0; j < 8; ++j) {
      CHECK(first.stages[j].device_bytes == second.stages[j].device_bytes);
      if (name == "all-sim0") CHECK(second.stages[j].device_bytes > 0);
    }
  }
}

TEST_CASE("a sim:0 stage hosted by a petra node equals the all-CPU run, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  runs r;
  node_process node;
  REQUIRE(r.train("cpu", {"runtime.mode=lockstep"}) == 0);
  REQUIRE(r.train("node", {"runtime.mode=lockstep", "pipeline.devices=[cpu,sim:0,sim:0,cpu,cpu,cpu,cpu,cpu]",
                           "pipeline.nodes=[local," + node.address() +
                               ",local,local,local,local,local,local]"}) == 0);
  CHECK(differing(r.weights("node"), r.weights("cpu")) == 0);
}

TEST_CASE("with op latency on the simulated device, the event wait is what orders the consumer") {
  PETRA_REQUIRE_FASHION_MNIST();
  runs r;
  const std::string devices = "pipeline.devices=" + placements.front().second;
  REQUIRE(r.train("cpu", {"runtime.mode=lockstep"}) == 0);
  REQUIRE(r.train("waits", {"runtime.mode=lockstep", devices, "runtime.sim_latency_us=300"}) == 0);
  CHECK(differing(r.weights("waits"), r.weights("cpu")) == 0);
  // The same run with the consumer's wait removed reads tensors before they are written.
  const int code = r.train("no-wait", {"runtime.mode=lockstep", devices, "runtime.sim_latency_us=300",
                                       "testing.sim_skip_import_wait=true"});
  if (code == 0)
    CHECK(differing(r.weights("no-wait"), r.weights("cpu")) > 0);
  else
    CHECK(code == 1);
}

TEST_CASE("async on simulated devices completes with bounded mailboxes") {
  PETRA_REQUIRE_FASHION_MNIST();
  runs r;
  for (const auto& [name, devices] : placements) {
    INFO(name);
    REQUIRE(r.train(name, {"runtime.mode=async", "pipeline.devices=" + devices}) == 0);
    const auto epochs = r.epochs(name);
    REQUIRE(epochs.size() == 2);
    for (const auto& s : epochs[1]["stages"]) {
      CHECK(s["mailbox_peak"].get<int64_t>() <= 2 * 8 - 1);
      CHECK(s["backwards"].get<int64_t>() == 8);
    }
  }
}

TEST_CASE(
    "a cuda stage on a machine without a GPU: exit code 2, the stage and the device named, nothing written") {
  std::string why;
  if (cuda_usable(&why)) PETRA_SKIP("this machine has a usable GPU");
  runs r;
  for (const char* mode : {"lockstep", "simulate", "async"}) {
    CAPTURE(mode);
    std::stringstream captured;
    auto* old = std::cerr.rdbuf(captured.rdbuf());
    const int code = r.train("gpu", {std::string("runtime.mode=") + mode,
                                     "pipeline.devices=[cpu,cpu,cuda:0,cpu,cpu,cpu,cpu,cpu]"});
    std::cerr.rdbuf(old);
    CHECK(code == 2);
    CHECK_MESSAGE(captured.str().find("pipeline.devices[2] (stage 3)") != std::string::npos, captured.str());
    CHECK_MESSAGE(captured.str().find("cuda:0") != std::string::npos, captured.str());
    CHECK_FALSE(fs::exists(r.root / "gpu"));
  }
}

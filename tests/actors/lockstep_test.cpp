// Lockstep actor runtime ≡ the reference simulator, bit for bit; delays and FIFO bounds as stamped.
#include <filesystem>
#include <fstream>
#include <map>

#include "app/commands.hpp"
#include "tests/actors/runtime_fixture.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("lockstep PETRA, J = 4: weights bit-identical to the simulator's") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained sim = train_once(tiny_config("simulate", "petra"));
  const trained actors = train_once(tiny_config("lockstep", "petra"));
  CHECK(differing(sim, actors) == 0);
  CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
  CHECK(actors.totals.correct == sim.totals.correct);
  CHECK(actors.totals.ticks == sim.totals.ticks);
}

TEST_CASE("lockstep delayed with input and weight stash, J = 4: bit-identical to the simulator") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained sim = train_once(tiny_config("simulate", "delayed+inputs+weights"));
  const trained actors = train_once(tiny_config("lockstep", "delayed+inputs+weights"));
  CHECK(differing(sim, actors) == 0);
  CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
}

TEST_CASE("lockstep stamps: stage j's delay is 2(J-j), a kept-input FIFO holds at most 2(J-j)+1") {
  PETRA_REQUIRE_FASHION_MNIST();
  const trained run = train_once(tiny_config("lockstep", "petra"));
  const auto& stages = run.stages;
  REQUIRE(stages.size() == 4);
  const int64_t micro_batches = 512 / 8;
  for (int j = 0; j < 4; ++j) {
    INFO("stage " << j + 1);
    const auto& delays = stages[j]["delay_ticks"];
    REQUIRE(delays.size() == 1);
    CHECK(delays.begin().key() == std::to_string(2 * (3 - j)));
    CHECK(delays.begin().value().get<int64_t>() == micro_batches);
  }
  CHECK(stages[0]["fifo_peak"].get<int64_t>() == 7);  // stem: 2(J-1)+1
  // Two couplings, reversible: they keep only the inputs sampled for the inversion error, 1 in 4,
  // so at most ⌈(2(J-j)+1)/4⌉ = 2 of the 5 micro-batches outstanding there.
  CHECK(stages[1]["fifo_peak"].get<int64_t>() == 2);
  CHECK(stages[2]["fifo_peak"].get<int64_t>() == 3);  // downsampling
  CHECK(stages[3]["fifo_peak"].get<int64_t>() == 1);  // head
  CHECK(stages[1]["inversion_samples"].get<int64_t>() == micro_batches / 4);
}

TEST_CASE("lockstep backprop (J = 1) equals the simulator's backprop and J = 1 PETRA, bit for bit") {
  PETRA_REQUIRE_FASHION_MNIST();
  config::run_config sim_cfg = tiny_config("simulate", "backprop");
  sim_cfg.pipeline.stage_blocks = {5};
  config::run_config actor_cfg = sim_cfg;
  actor_cfg.runtime.mode = config::runtime_mode::lockstep;
  const trained sim = train_once(sim_cfg);
  const trained actors = train_once(actor_cfg);
  CHECK(differing(sim, actors) == 0);
  CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
  config::run_config petra_cfg = actor_cfg;
  set_method(petra_cfg, "petra");
  CHECK(differing(train_once(petra_cfg), actors) == 0);  // with J = 1 PETRA is backprop
}

// The default preset (fashion_small, J = 8, its thread counts): every method on the actor
// runtime's lockstep schedule and on the simulator, bit for bit.
TEST_CASE("lockstep = simulate, bit for bit, on the default preset for every method") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* method :
       {"petra", "delayed+inputs+weights", "delayed+inputs", "delayed+weights", "backprop"}) {
    INFO(method);
    config::run_config c = config::load_config("default");
    set_method(c, method);
    c.data.train_limit = 1024;
    c.data.test_limit = 64;
    c.training.epochs = 1;
    c.output.progress = false;
    c.runtime.mode = config::runtime_mode::simulate;
    const trained sim = train_once(c);
    c.runtime.mode = config::runtime_mode::lockstep;
    const trained actors = train_once(c);
    CHECK(differing(sim, actors) == 0);
    CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
    CHECK(actors.totals.ticks == sim.totals.ticks);
    for (std::size_t j = 0; j < sim.stages.size(); ++j) {
      CHECK(actors.stages[j]["delay_ticks"] == sim.stages[j]["delay_ticks"]);
      CHECK(actors.stages[j]["staleness_steps"] == sim.stages[j]["staleness_steps"]);
    }
  }
}

// A reversible vision transformer (small_revvit: J = 5, one block per stage): lockstep = simulate
// bit for bit, under PETRA and backprop.
TEST_CASE("lockstep = simulate, bit for bit, on a small revvit under PETRA and backprop") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* method : {"petra", "backprop"}) {
    INFO(method);
    config::run_config c = small_revvit("simulate", method);
    const trained sim = train_once(c);
    c.runtime.mode = config::runtime_mode::lockstep;
    const trained actors = train_once(c);
    REQUIRE(sim.stages.size() == 5);
    CHECK(differing(sim, actors) == 0);
    CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
    CHECK(actors.totals.correct == sim.totals.correct);
    CHECK(actors.totals.ticks == sim.totals.ticks);
  }
}

// Epochs without draining: the stream crosses the epoch end and each epoch is evaluated by a wave
// of test batches that follows its last micro-batch, on the live weights (docs/design.md §4).
TEST_CASE("continuous epochs: lockstep = simulate bit for bit, the per-epoch test results included") {
  PETRA_REQUIRE_FASHION_MNIST();
  const std::string root =
      (std::filesystem::temp_directory_path() / ("petra-continuous-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(root);
  std::map<std::string, std::vector<nlohmann::json>> epochs;
  for (const char* mode : {"simulate", "lockstep", "async"}) {
    const std::vector<std::string> sets = {std::string("runtime.mode=") + mode,
                                           "data.train_limit=1024",
                                           "data.test_limit=256",
                                           "training.epochs=2",
                                           "output.dir=" + root,
                                           std::string("output.name=") + mode,
                                           "output.progress=false"};
    REQUIRE(app::train_command({"default", sets, "", 0}) == 0);
    std::ifstream in(root + "/" + mode + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["event"] == "epoch") epochs[mode].push_back(j);
    }
    REQUIRE(epochs[mode].size() == 2);
    CHECK(epochs[mode][0]["evaluated"] == "live weights (evaluation wave)");
  }
  trained sim, lock;
  sim.weights = load_safetensors(root + "/simulate/checkpoint.safetensors").tensors;
  lock.weights = load_safetensors(root + "/lockstep/checkpoint.safetensors").tensors;
  CHECK(differing(sim, lock) == 0);
  for (int e = 0; e < 2; ++e) {
    INFO("epoch " << e + 1);
    for (const char* key : {"train_loss", "train_accuracy", "test_loss", "test_accuracy"})
      CHECK(epochs["lockstep"][e][key] == epochs["simulate"][e][key]);
    CHECK(epochs["async"][e]["evaluated"] == "live weights (evaluation wave)");
    CHECK(epochs["async"][e]["test_loss"].get<double>() > 0);
    // The learning rate after the epoch's last step of stage 1, the same in every runtime (before:
    // the actor runtimes wrote the rate of step 0, their count of stage 1's steps being read only
    // at a phase's end).
    CHECK(epochs["lockstep"][e]["lr"] == epochs["simulate"][e]["lr"]);
    CHECK(epochs["async"][e]["lr"] == epochs["simulate"][e]["lr"]);
  }
  // The cosine schedule moves between the two epoch ends.
  CHECK(epochs["simulate"][1]["lr"].get<double>() < epochs["simulate"][0]["lr"].get<double>());
  std::filesystem::remove_all(root);
}

TEST_CASE("evaluation waves leave training alone: the final weights do not depend on the test set's size") {
  PETRA_REQUIRE_FASHION_MNIST();
  // Evaluation batches cross the stages between training ticks (eval mode, running statistics):
  // if one touched a weight, a BN running statistic, the FIFO or the data stream, a run with 8
  // times as many of them would end elsewhere.
  const std::string root =
      (std::filesystem::temp_directory_path() / ("petra-waves-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(root);
  for (const char* mode : {"simulate", "lockstep"}) {
    CAPTURE(mode);
    std::map<int, trained> runs;
    for (int test_limit : {64, 512}) {
      const std::string name = std::string(mode) + "-" + std::to_string(test_limit);
      const std::vector<std::string> sets = {std::string("runtime.mode=") + mode,
                                             "data.train_limit=512",
                                             "data.test_limit=" + std::to_string(test_limit),
                                             "training.epochs=2",
                                             "training.micro_batch=8",
                                             "pipeline.stage_blocks=[1,2,1,1]",
                                             "output.dir=" + root,
                                             "output.name=" + name,
                                             "output.progress=false"};
      REQUIRE(app::train_command({"tiny", sets, "", 0}) == 0);
      runs[test_limit].weights = load_safetensors(root + "/" + name + "/checkpoint.safetensors").tensors;
    }
    REQUIRE(!runs[64].weights.empty());
    CHECK(differing(runs[64], runs[512]) == 0);
  }
  std::filesystem::remove_all(root);
}

namespace {

/// The mean of a histogram {"value": count, ...} as metrics.jsonl writes it.
double histogram_mean(const nlohmann::json& h) {
  double sum = 0, n = 0;
  for (auto it = h.begin(); it != h.end(); ++it) {
    sum += std::stod(it.key()) * it.value().get<double>();
    n += it.value().get<double>();
  }
  return n > 0 ? sum / n : 0;
}

}  // namespace

// training.tick_order: backward_first runs a tick's backward (and its optimizer step) before the
// forward at every stage but the last: same ticks, same delays, one backward less between a
// micro-batch's forward and its backward, one kept input fewer.
TEST_CASE("tick order backward_first: lockstep = simulate bit for bit, delays 2(J-j), less staleness") {
  PETRA_REQUIRE_FASHION_MNIST();
  for (const char* method : {"petra", "delayed+inputs+weights"}) {
    INFO(method);
    config::run_config sim_cfg = tiny_config("simulate", method);
    sim_cfg.training.tick_order = config::tick_order::backward_first;
    config::run_config actor_cfg = sim_cfg;
    actor_cfg.runtime.mode = config::runtime_mode::lockstep;
    const trained sim = train_once(sim_cfg);
    const trained actors = train_once(actor_cfg);
    CHECK(differing(sim, actors) == 0);
    CHECK(actors.totals.loss_sum == sim.totals.loss_sum);
    CHECK(actors.totals.ticks == sim.totals.ticks);
    const trained usual = train_once(tiny_config("simulate", method));
    CHECK(differing(sim, usual) > 0);  // the order changes the weights
    CHECK(usual.totals.ticks == sim.totals.ticks);
    REQUIRE(actors.stages.size() == 4);
    for (int j = 0; j < 4; ++j) {
      INFO("stage " << j + 1);
      const auto& delays = actors.stages[j]["delay_ticks"];
      REQUIRE(delays.size() == 1);
      CHECK(delays.begin().key() == std::to_string(2 * (3 - j)));
      const double before = histogram_mean(usual.stages[j]["staleness_steps"]);
      const double now = histogram_mean(actors.stages[j]["staleness_steps"]);
      // k = 2: 2(J-j)/k steps on average usually, (2(J-j) - 1)/k with the backward first.
      if (j < 3) CHECK(now == doctest::Approx(before - 0.5).epsilon(0.05));
      if (j == 3) CHECK(now == 0);
    }
    if (std::string(method) != "petra") {
      // Every stage keeps its inputs: 2(J-j) at most (the oldest leaves before the next comes).
      CHECK(actors.stages[0]["fifo_peak"].get<int64_t>() == 6);
      CHECK(actors.stages[1]["fifo_peak"].get<int64_t>() == 4);
      CHECK(actors.stages[2]["fifo_peak"].get<int64_t>() == 2);
      CHECK(actors.stages[3]["fifo_peak"].get<int64_t>() == 1);
      CHECK(usual.stages[0]["fifo_peak"].get<int64_t>() == 7);
    }
  }
}

// The trainer loop giving up: when faults.max_restarts leaves no recovery, or when the rollback
// itself cannot be made (a lost node and no spare), the run writes the failure line of its last
// attempt, a summary marked failed, and says how to resume; no actor system needed (the failures
// come from a runtime that fails on purpose).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"
#include "training/simulate_runtime.hpp"
#include "training/train_loop.hpp"

namespace fs = std::filesystem;
using namespace petra;

namespace {

/// The simulator, but every phase fails as a crash of stage 3 would, and recover() fails too when
/// asked to (as with a node lost and no spare to put its stages on).
class failing_runtime : public pipeline_runtime {
 public:
  failing_runtime(std::unique_ptr<pipeline_runtime> inner, bool recover_fails)
      : inner_(std::move(inner)), recover_fails_(recover_fails) {}
  phase_result train(phase_request, const progress_fn&, const epoch_fn&, const cut_fn&) override {
    run_failure f(failure_kind::injected_crash, 2, 7, "stage 3 crashed at tick 7 (a test's)");
    f.faults.assign(5, fault_counts{});
    f.completed = 0;
    throw f;
  }
  bool takes_cuts() const override { return inner_->takes_cuts(); }
  eval_result evaluate(data_feed& test) override { return inner_->evaluate(test); }
  void recalibrate(data_feed& feed, int64_t micro_batches) override {
    inner_->recalibrate(feed, micro_batches);
  }
  std::vector<stage_snapshot> snapshot() override { return inner_->snapshot(); }
  void restore(const checkpoint& from) override { inner_->restore(from); }
  void recover() override {
    if (recover_fails_) throw std::runtime_error("no spare node is left for stages 4-5");
  }
  double first_stage_lr(int64_t steps) override { return inner_->first_stage_lr(steps); }
  void write_trace(const std::string& path) override { inner_->write_trace(path); }

 private:
  std::unique_ptr<pipeline_runtime> inner_;
  bool recover_fails_;
};

struct ended {
  int code;
  std::string said;  // stderr
  std::vector<nlohmann::json> failures, summaries;
};

ended train_failing(const fs::path& out, int max_restarts, bool recover_fails) {
  train_options o;
  o.config = "ci_smoke";
  o.sets = {"output.dir=" + out.string(), "output.name=r", "data.train_limit=64", "data.test_limit=32",
            "faults.max_restarts=" + std::to_string(max_restarts)};
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const int code =
      run_training(o, [&](const config::run_config& c, training_data& d, const optimizer_settings& opt) {
        return std::make_unique<failing_runtime>(make_simulate_runtime(c, d, opt), recover_fails);
      });
  std::cerr.rdbuf(old);
  ended e{code, captured.str(), {}, {}};
  std::ifstream in(out / "r" / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["event"] == "failure") e.failures.push_back(j);
    if (j["event"] == "summary") e.summaries.push_back(j);
  }
  return e;
}

}  // namespace

TEST_CASE("give up: no recovery left after faults.max_restarts, the last attempt's failure line says why") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  testing::scratch_dir out;
  const ended e = train_failing(out.path, 1, false);
  INFO(e.said);
  CHECK(e.code == 1);
  REQUIRE(e.failures.size() == 2);  // the attempt rolled back, and the one after which it gave up
  CHECK(e.failures[0]["recovery"] == "global");
  CHECK(e.failures[0]["restored_from"] == "checkpoint");
  CHECK(e.failures[1]["attempt"] == 1);
  CHECK(e.failures[1]["recovery"] == "none");
  CHECK(e.failures[1]["gave_up"] == "faults.max_restarts (1) recoveries of this phase made already");
  REQUIRE(e.summaries.size() == 1);
  CHECK(e.summaries[0]["status"] == "failed");
  CHECK(e.summaries[0]["micro_batches"]["restarts"] == 1);
  CHECK(e.said.find("continue with: petra train --resume " + (out.path / "r").string()) != std::string::npos);
}

TEST_CASE("give up: a rollback that cannot be made ends the run, and the failure line says why") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing");
  testing::scratch_dir out;
  const ended e = train_failing(out.path, 3, true);
  INFO(e.said);
  CHECK(e.code == 1);
  CHECK(e.said.find("the rollback to the checkpoint failed: no spare node is left for stages 4-5") !=
        std::string::npos);
  REQUIRE(e.failures.size() == 1);
  CHECK(e.failures[0]["recovery"] == "none");
  CHECK(e.failures[0]["gave_up"] ==
        "the rollback to the checkpoint failed: no spare node is left for stages 4-5");
  REQUIRE(e.summaries.size() == 1);
  CHECK(e.summaries[0]["status"] == "failed");
  CHECK(e.said.find("continue with: petra train --resume") != std::string::npos);
}

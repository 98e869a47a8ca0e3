// `petra migrate`: asks the training running in a run directory to move a stage at its next drained
// point, through a request file the trainer takes there, and waits for its answer in metrics.jsonl.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/commands.hpp"
#include "training/migration.hpp"
#include "training/runtime_support.hpp"

namespace petra::app {
namespace {

namespace fs = std::filesystem;

/// The answer to request `id` among the lines of metrics.jsonl after byte `offset` (moved past the
/// whole lines read; a half-written last line waits for the next look).
std::optional<nlohmann::json> find_answer(const std::string& metrics, std::streamoff& offset,
                                          const std::string& id) {
  std::ifstream in(metrics);
  if (!in) return std::nullopt;
  in.seekg(offset);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline yet: the trainer is still writing it
    offset = in.tellg();
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.value("request", std::string()) == id) return record;
  }
  return std::nullopt;
}

/// Takes back our request when nobody took it (the trainer renames it when it does).
void withdraw(const std::string& run, const std::string& id) {
  std::ifstream in(migration_request_path(run));
  const nlohmann::json body = nlohmann::json::parse(in, nullptr, false);
  in.close();
  std::error_code ignored;
  if (body.is_object() && body.value("id", std::string()) == id)
    fs::remove(migration_request_path(run), ignored);
}

}  // namespace

int migrate_command(const migrate_options& o) {
  const std::string metrics = (fs::path(o.run) / "metrics.jsonl").string();
  std::string id;
  try {
    if (!fs::exists(fs::path(o.run) / "config.yaml"))
      throw std::invalid_argument("'" + o.run + "' is not a run directory (it has no config.yaml)");
    const config::run_config cfg = config::load_config((fs::path(o.run) / "config.yaml").string(), {});
    if (const std::string why = why_not_migrated(cfg); !why.empty())
      throw std::invalid_argument("the run in '" + o.run + "' cannot migrate a stage: " + why);
    check_requested_migration(cfg, o.stage, o.to);
    const long pid = running_trainer(o.run);
    if (pid == 0)
      throw std::invalid_argument("no training is running in '" + o.run +
                                  "' (its train.pid is missing, or that process is gone)");
    id = std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
    std::streamoff offset = 0;
    if (std::ifstream existing{metrics, std::ios::ate}) offset = existing.tellg();
    if (!post_migration_request(o.run, migration_request{id, o.stage, o.to}))
      throw std::invalid_argument("a migration request is pending already (" + migration_request_path(o.run) +
                                  "): wait for its answer");
    std::printf(
        "petra migrate: asked the training in %s (pid %ld) to move stage %d to %s at its next "
        "drained point; waiting up to %.0f s\n",
        o.run.c_str(), pid, o.stage, o.to.c_str(), o.timeout_seconds);
    std::fflush(stdout);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_seconds);
    for (;;) {
      const bool alive = running_trainer(o.run) != 0;  // before the look: its last lines are in by then
      if (const auto answer = find_answer(metrics, offset, id)) {
        if (answer->value("event", std::string()) == "migrate") {
          std::printf(
              "petra migrate: stage %d moved from %s to %s before micro-batch %lld (tick %lld): "
              "%lld bytes in %.3f s\n",
              o.stage, answer->value("from", std::string()).c_str(),
              answer->value("to", std::string()).c_str(), answer->value("position", 0LL),
              answer->value("tick", 0LL), answer->value("bytes", 0LL), answer->value("seconds", 0.0));
          return 0;
        }
        std::cerr << "petra migrate: the training refused: " << answer->value("reason", std::string())
                  << "\n";
        return 2;
      }
      if (!alive) {
        withdraw(o.run, id);
        std::cerr << "petra migrate: the training in '" << o.run << "' ended before it answered\n";
        return 2;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        withdraw(o.run, id);
        std::cerr << "petra migrate: no answer within " << o.timeout_seconds
                  << " s: the training reached no drained point (lockstep drains between phases: "
                     "at epoch ends with training.drain_at_epoch_end, at pipeline.migrate points)\n";
        return 1;
      }
      std::this_thread::sleep_for(
          std::chrono::milliseconds(50));  // a poll of the file, not a wait for an event
    }
  } catch (const std::exception& e) {
    std::cerr << "petra migrate: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace petra::app

// What every trace test needs: short runs in a scratch directory, and the invariants of any trace
// petra writes.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "app/commands.hpp"
#include "tests/actors/runtime_fixture.hpp"

namespace petra::testing {

namespace fs = std::filesystem;

struct run_here {
  fs::path root = fs::temp_directory_path() / ("petra-trace-" + std::to_string(::getpid()));
  run_here() { fs::remove_all(root); }
  ~run_here() { fs::remove_all(root); }
  int train(const std::string& name, std::vector<std::string> sets) const {
    sets.insert(sets.end(), {"data.train_limit=512", "data.test_limit=64", "pipeline.stage_blocks=[1,2,1,1]",
                             "training.micro_batch=32", "training.accumulation=1",
                             "output.dir=" + root.string(), "output.name=" + name, "output.progress=false"});
    return app::train_command({"tiny", sets, "", 0});
  }
  nlohmann::json trace(const std::string& name) const {
    std::ifstream in(root / name / "trace.json");
    return nlohmann::json::parse(in);
  }
  std::vector<nlohmann::json> lines(const std::string& name, const std::string& event) const {
    std::ifstream in(root / name / "metrics.jsonl");
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["event"] == event) out.push_back(std::move(j));
    }
    return out;
  }
};

/// The invariants of any trace petra writes; returns the names of its processes.
inline std::set<std::string> check_trace(const nlohmann::json& trace, int64_t first_id, int64_t last_id) {
  REQUIRE(trace.contains("traceEvents"));
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, double> last_ts;  // per track
  std::map<uint64_t, int> flow_ends;              // id → 1 start, 2 finish, 3 both
  int spans = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M") {
      if (e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
      continue;
    }
    const auto track = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
    const double ts = e["ts"];
    auto it = last_ts.find(track);
    if (it != last_ts.end()) CHECK(ts >= it->second);  // time never runs backwards on a track
    last_ts[track] = ts;
    if (e.contains("args") && e["args"].contains("tick")) {
      const int64_t id = e["args"]["tick"];
      CHECK(id >= first_id);  // the window holds
      CHECK(id <= last_id);
    }
    if (ph == "X") {
      ++spans;
      CHECK(e["dur"].get<double>() >= 0);
    } else if (ph == "s") {
      flow_ends[e["id"].get<uint64_t>()] |= 1;
    } else if (ph == "f") {
      flow_ends[e["id"].get<uint64_t>()] |= 2;
    } else {
      CHECK((ph == "C" || ph == "B" || ph == "E"));
    }
  }
  CHECK(spans > 0);
  CHECK(!flow_ends.empty());
  for (const auto& [id, ends] : flow_ends) CHECK_MESSAGE(ends == 3, "flow " << id << " has one end only");
  std::set<std::string> names;
  for (const auto& [pid, name] : processes) names.insert(name);
  return names;
}

}  // namespace petra::testing

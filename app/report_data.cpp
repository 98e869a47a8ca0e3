// Reading a run directory for `petra report`: every metrics line is parsed and type-checked, and
// an error names the file, the line and the key, so a truncated or hand-edited file is refused.
#include "app/report_data.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "training/stage_metrics.hpp"
#include "training/tick_schedule.hpp"

namespace petra::app {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

/// Where a metrics value comes from, for error messages: "runs/x/metrics.jsonl line 7".
struct line_context {
  std::string where;
  [[noreturn]] void fail(const std::string& what) const { throw report_input_error(where + ": " + what); }
};

std::string text(const json& object, const char* key, const line_context& at) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  if (!it->is_string()) at.fail(std::string("\"") + key + "\" must be a string, got " + it->dump());
  return it->get<std::string>();
}

/// A line through training's description of it.
template <class Line>
Line read_line(const json& line, const line_context& at) {
  try {
    return json_record::read<Line>(line, at.where);
  } catch (const json_record::field_error& e) {
    throw report_input_error(e.what());
  }
}

/// An epoch or step line; each stage numbered from 1.
template <class Line>
Line read_staged_line(const json& line, const line_context& at) {
  Line out = read_line<Line>(line, at);
  for (std::size_t i = 0; i < out.stages.size(); ++i)
    if (out.stages[i].stage < 1)
      throw report_input_error(at.where + ", stages[" + std::to_string(i) + "]: \"stage\" must be ≥ 1");
  return out;
}

void read_config(const fs::path& file, run_data& run) {
  std::ifstream in(file);
  std::ostringstream content;
  content << in.rdbuf();
  run.config_yaml = content.str();
  try {  // the text just read, through config/'s one parser: what the run was configured with, typed
    const config::run_config c = config::parse_config(run.config_yaml, file.string());
    run.method = c.training.method;
    run.accumulation = c.training.accumulation;
    run.runtime = c.runtime.mode;
  } catch (const config::config_error& e) {
    throw report_input_error(file.string() + ": not a readable config (" + e.what() +
                             "); it is the resolved config a run writes");
  }
}

}  // namespace

double run_data::expected_staleness(int stage) const {
  return staleness_steps(
      method, round_trip_ticks(static_cast<std::size_t>(stage - 1), static_cast<std::size_t>(stage_count)),
      accumulation);
}

run_data read_run(const std::string& dir) {
  run_data run;
  run.dir = dir;
  const fs::path path(dir);
  if (!fs::is_directory(path))
    throw report_input_error(
        dir + ": no such run directory (give the directory `petra train` wrote, e.g. runs/<name>)");
  run.name = fs::weakly_canonical(path).filename().string();

  const fs::path config = path / "config.yaml";
  if (!fs::is_regular_file(config))
    throw report_input_error(config.string() + ": missing; " + dir +
                             " is not a run directory of `petra train`");
  read_config(config, run);

  const fs::path metrics = path / "metrics.jsonl";
  if (!fs::is_regular_file(metrics))
    throw report_input_error(metrics.string() + ": missing; the run logged no metrics (did it start?)");
  std::ifstream in(metrics);
  int line_number = 0;
  for (std::string text_line; std::getline(in, text_line);) {
    ++line_number;
    const line_context at{metrics.string() + " line " + std::to_string(line_number)};
    if (text_line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json line;
    try {
      line = json::parse(text_line);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
      at.fail(std::string("not valid JSON (") + e.what() +
              "); a truncated line? Remove it to report what is before it");
    }
    if (!line.is_object()) at.fail("expected a JSON object, got " + line.dump().substr(0, 80));
    const std::string event = text(line, "event", at);
    if (event == "epoch") {
      run.epochs.push_back(read_staged_line<epoch_line>(line, at));
    } else if (event == "step") {
      run.steps.push_back(read_staged_line<step_line>(line, at));
    } else if (event == "summary") {
      run.summary = read_line<summary_line>(line, at);
    } else if (event == "rebalance") {
      rebalance_mark m;
      try {
        m.seconds = line.at("seconds").get<double>();
        m.block = line.at("block").get<int>();
        m.from = line.at("from").get<int>();
        m.to = line.at("to").get<int>();
      } catch (const json::exception&) {
        at.fail("a rebalance line needs numbers \"seconds\", \"block\", \"from\" and \"to\"");
      }
      run.moves.push_back(m);
    } else if (event == "failure") {
      const std::string what = text(line, "what", at);
      run.failures.push_back(what.empty() ? "failure at line " + std::to_string(line_number) : what);
    }  // other events: not ours to show
  }
  if (in.bad())
    throw report_input_error(metrics.string() + ": read error after line " + std::to_string(line_number));
  if (run.epochs.empty())
    throw report_input_error(metrics.string() + ": no epoch lines (" + std::to_string(line_number) +
                             " lines read); a report needs at least one finished epoch");
  for (const auto& e : run.epochs)
    for (const auto& s : e.stages) run.stage_count = std::max(run.stage_count, s.stage);
  return run;
}

}  // namespace petra::app

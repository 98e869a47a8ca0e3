// Reading a run directory for `petra report`: every metrics line is parsed and type-checked, and
// an error names the file, the line and the key, so a truncated or hand-edited file is refused.
#include "app/report_data.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "training/stage_metrics.hpp"

namespace petra::app {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

/// Where a metrics value comes from, for error messages: "runs/x/metrics.jsonl line 7".
struct line_context {
  std::string where;
  [[noreturn]] void fail(const std::string& what) const { throw report_input_error(where + ": " + what); }
};

std::optional<double> number(const json& object, const char* key, const line_context& at) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) at.fail(std::string("\"") + key + "\" must be a number, got " + it->dump());
  return it->get<double>();
}

std::optional<int64_t> integer(const json& object, const char* key, const line_context& at) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) at.fail(std::string("\"") + key + "\" must be an integer, got " + it->dump());
  return it->get<int64_t>();
}

int64_t required_integer(const json& object, const char* key, const line_context& at) {
  const auto value = integer(object, key, at);
  if (!value) at.fail(std::string("\"") + key + "\" is missing");
  return *value;
}

std::string text(const json& object, const char* key, const line_context& at) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  if (!it->is_string()) at.fail(std::string("\"") + key + "\" must be a string, got " + it->dump());
  return it->get<std::string>();
}

/// The "stages" array of a line; each element an object with an integer "stage" ≥ 1.
std::vector<const json*> stage_objects(const json& line, const line_context& at) {
  std::vector<const json*> out;
  const auto it = line.find("stages");
  if (it == line.end() || it->is_null()) return out;
  if (!it->is_array()) at.fail("\"stages\" must be an array");
  for (const auto& s : *it) {
    if (!s.is_object()) at.fail("each element of \"stages\" must be an object, got " + s.dump());
    const line_context inner{at.where + ", stages[" + std::to_string(out.size()) + "]"};
    if (required_integer(s, "stage", inner) < 1) inner.fail("\"stage\" must be ≥ 1");
    out.push_back(&s);
  }
  return out;
}

/// A histogram {"7": 12, ...}: integer values (as keys) to counts.
std::map<int64_t, int64_t> histogram(const json& stage, const char* key, const line_context& at) {
  std::map<int64_t, int64_t> out;
  const auto it = stage.find(key);
  if (it == stage.end() || it->is_null()) return out;
  if (!it->is_object()) at.fail(std::string("\"") + key + "\" must be an object {\"value\": count}");
  for (auto bucket = it->begin(); bucket != it->end(); ++bucket) {
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(bucket.key(), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != bucket.key().size())
      at.fail(std::string("\"") + key + "\" has the key \"" + bucket.key() + "\", expected an integer");
    if (!bucket.value().is_number_integer())
      at.fail(std::string("\"") + key + "\" has a count " + bucket.value().dump() + ", expected an integer");
    out[value] += bucket.value().get<int64_t>();
  }
  return out;
}

epoch_line read_epoch(const json& line, const line_context& at) {
  epoch_line e;
  e.epoch = static_cast<int>(required_integer(line, "epoch", at));
  e.runtime = text(line, "runtime", at);
  e.train_loss = number(line, "train_loss", at);
  e.train_accuracy = number(line, "train_accuracy", at);
  e.test_loss = number(line, "test_loss", at);
  e.test_accuracy = number(line, "test_accuracy", at);
  e.images_per_s = number(line, "images_per_s", at);
  e.epoch_seconds = number(line, "epoch_seconds", at);
  for (const json* s : stage_objects(line, at)) {
    const line_context inner{at.where + ", stage " + std::to_string((*s)["stage"].get<int64_t>())};
    epoch_stage stage;
    stage.stage = static_cast<int>((*s)["stage"].get<int64_t>());
    stage.staleness_steps = histogram(*s, "staleness_steps", inner);
    stage.busy_fraction = number(*s, "busy_fraction", inner);
    stage.inversion_error_mean = number(*s, "inversion_error_mean", inner);
    stage.fifo_peak = integer(*s, "fifo_peak", inner);
    stage.mailbox_peak = integer(*s, "mailbox_peak", inner);
    e.stages.push_back(std::move(stage));
  }
  return e;
}

step_line read_step(const json& line, const line_context& at) {
  step_line s;
  s.epoch = static_cast<int>(integer(line, "epoch", at).value_or(0));
  s.step = required_integer(line, "step", at);
  s.micro_batches = integer(line, "micro_batches", at);
  s.seconds = number(line, "seconds", at);
  s.loss = number(line, "loss", at);
  s.accuracy = number(line, "accuracy", at);
  s.lr = number(line, "lr", at);
  s.images_per_s = number(line, "images_per_s", at);
  for (const json* o : stage_objects(line, at)) {
    const line_context inner{at.where + ", stage " + std::to_string((*o)["stage"].get<int64_t>())};
    step_stage stage;
    stage.stage = static_cast<int>((*o)["stage"].get<int64_t>());
    stage.staleness_mean = number(*o, "staleness_mean", inner);
    stage.inversion_error_mean = number(*o, "inversion_error_mean", inner);
    s.stages.push_back(stage);
  }
  return s;
}

summary_line read_summary(const json& line, const line_context& at) {
  summary_line s;
  s.test_accuracy = number(line, "test_accuracy", at);
  s.wall_seconds = number(line, "wall_seconds", at);
  s.train_seconds = number(line, "train_seconds", at);
  s.images_per_s = number(line, "images_per_s", at);
  const auto it = line.find("micro_batches");
  if (it != line.end() && !it->is_null()) {
    if (!it->is_object()) at.fail("\"micro_batches\" must be an object");
    for (auto m = it->begin(); m != it->end(); ++m)
      if (m.value().is_number()) s.micro_batches[m.key()] = m.value().get<double>();
  }
  return s;
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
      method,
      schedule_delay_ticks(static_cast<std::size_t>(stage - 1), static_cast<std::size_t>(stage_count)),
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
    } catch (const json::parse_error& e) {
      at.fail(std::string("not valid JSON (") + e.what() +
              "); a truncated line? Remove it to report what is before it");
    }
    if (!line.is_object()) at.fail("expected a JSON object, got " + line.dump().substr(0, 80));
    const std::string event = text(line, "event", at);
    if (event == "epoch") {
      run.epochs.push_back(read_epoch(line, at));
    } else if (event == "step") {
      run.steps.push_back(read_step(line, at));
    } else if (event == "summary") {
      run.summary = read_summary(line, at);
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

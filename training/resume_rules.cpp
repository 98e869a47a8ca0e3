// What a resume may change.
#include "training/resume_rules.hpp"

namespace petra {
namespace {

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

std::string resume_change_refusal(const std::string& key) {
  // How long it trains: the learning-rate schedule follows the new total from the resume point on.
  if (key == "training.epochs") return "";
  // The loader's threads decode the same images in the same order whatever their number.
  if (key == "data.workers") return "";
  if (key == "output.dir" || key == "output.name")
    return "the run directory is the one --resume names (move the directory to rename it)";
  if (key == "runtime.precision") return "it changes the arithmetic the model trains with";
  // Where and how the stages run, the faults injected and what the run writes: the weights so far
  // stay the run's.
  for (const char* prefix : {"runtime.", "pipeline.", "faults.", "output.", "tls.", "testing.", "nodes"})
    if (starts_with(key, prefix)) return "";
  if (starts_with(key, "model.")) return "the checkpoint holds the weights of the model the run started with";
  if (starts_with(key, "data.")) return "the run trains on the data it started with";
  return "it changes what the run trains from here on, and the weights so far are those of the run as "
         "started";
}

std::vector<config::key_change> check_resume_changes(const config::run_config& saved,
                                                     const config::run_config& resumed) {
  const std::vector<config::key_change> changes = config::changed_keys(saved, resumed);
  for (const config::key_change& c : changes) {
    const std::string why = resume_change_refusal(c.key);
    if (why.empty()) continue;
    const std::string source = config::where(resumed, c.key);
    throw config::config_error(
        c.key + ": a resumed run cannot change it (" + c.before + " in config.yaml, " + c.after + " " +
        (source == "(default)" ? "in --set" : source) + "): " + why +
        ". A resume may change training.epochs, data.workers, and the runtime., pipeline., faults., output., "
        "tls., testing. and nodes keys (not runtime.precision, output.dir or output.name); to train with "
        "another value, "
        "start a new run: petra train <run>/config.yaml --set " +
        c.key + "=...");
  }
  return changes;
}

}  // namespace petra

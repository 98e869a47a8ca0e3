// Live migration's entries (pipeline.migrate "32:3>sim:0") and targets ("cpu/2@gpu1"): parsed here
// once, into typed values.
#include <string>

#include "config/config.hpp"
#include "config/decimal.hpp"

namespace petra::config {
std::string migration_target::str() const {
  std::string out = device.str();
  if (threads > 0) out += "/" + std::to_string(threads);
  if (node != "local") out += "@" + node;
  return out;
}

migration_target parse_migration_target(const std::string& text) {
  const std::string help = "'" + text +
                           "' is not a target: write DEVICE[/THREADS][@NODE], e.g. sim:0, cpu/2 (the CPU "
                           "with 2 compute threads) or cpu@127.0.0.1:7001 (a `petra node`)";
  migration_target out;
  const auto at = text.find('@');
  const std::string where = text.substr(0, at);
  if (at != std::string::npos) {
    out.node = text.substr(at + 1);
    if (out.node.empty()) throw config_error(help);
  }
  const auto slash = where.find('/');
  if (slash != std::string::npos) {
    const int64_t threads = decimal_digits(where.substr(slash + 1));
    if (threads < 1 || threads > 1024) throw config_error(help);
    out.threads = static_cast<int>(threads);
  }
  try {
    out.device = parse_device(where.substr(0, slash));
  } catch (const config_error& e) {
    throw config_error(help + " (" + e.what() + ")");
  }
  return out;
}

std::string stage_migration::str() const {
  return std::to_string(position) + ":" + std::to_string(stage) + ">" + to.str();
}

stage_migration parse_stage_migration(const std::string& text) {
  const std::string help = "'" + text +
                           "' is not a migration: write position:stage>target, e.g. 32:3>sim:0 (at the "
                           "drained point before micro-batch 32 of the run, stage 3 moves to sim:0)";
  const auto colon = text.find(':');
  const auto arrow = text.find('>');
  if (colon == std::string::npos || arrow == std::string::npos || arrow < colon) throw config_error(help);
  const int64_t position = decimal_digits(text.substr(0, colon));
  const int64_t stage = decimal_digits(text.substr(colon + 1, arrow - colon - 1));
  if (position < 0 || stage < 1 || stage > 1000000) throw config_error(help);
  stage_migration out;
  out.position = position;
  out.stage = static_cast<int>(stage);
  try {
    out.to = parse_migration_target(text.substr(arrow + 1));
  } catch (const config_error& e) {
    throw config_error(help + ": " + e.what());
  }
  return out;
}

}  // namespace petra::config

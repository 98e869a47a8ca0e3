// Forced block moves of testing.rebalance_moves ("64:2>3"): parsed here once, into typed values.
#include <string>

#include "config/config.hpp"
#include "config/decimal.hpp"

namespace petra::config {
std::string block_move::str() const {
  return std::to_string(position) + ":" + std::to_string(from) + ">" + std::to_string(to);
}

block_move parse_block_move(const std::string& text) {
  const std::string help = "'" + text +
                           "' is not a move: write position:from>to, e.g. 64:2>3 (at the rebalancing point "
                           "before micro-batch 64 of the run, a block of stage 2 moves to stage 3)";
  const auto colon = text.find(':');
  const auto arrow = text.find('>');
  if (colon == std::string::npos || arrow == std::string::npos || arrow < colon) throw config_error(help);
  const int64_t position = decimal_digits(text.substr(0, colon));
  const int64_t from = decimal_digits(text.substr(colon + 1, arrow - colon - 1));
  const int64_t to = decimal_digits(text.substr(arrow + 1));
  if (position < 0 || from < 1 || to < 1 || from > 1000000 || to > 1000000) throw config_error(help);
  block_move out;
  out.position = position;
  out.from = static_cast<int>(from);
  out.to = static_cast<int>(to);
  return out;
}

}  // namespace petra::config

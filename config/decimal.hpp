// The plain decimal numbers inside config entries ("32:3>sim:0", "64:2>3", "A@2.5"): one reader for
// them.
#pragma once

#include <cstdint>
#include <string>

namespace petra::config {

/// The decimal number `text` (digits only, at most 18 of them), or -1.
inline int64_t decimal_digits(const std::string& text) {
  if (text.empty() || text.size() > 18) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

/// The seconds `text` of an entry such as faults.kill_node's "A@2.5": digits with at most one '.' and
/// at least one digit ("2", "2.5", ".5", "10."), at most 18 characters; else -1 ("", ".", "1.2.3",
/// "2s", "-1"). Read the same way everywhere, whatever the C locale's decimal point.
inline double decimal_seconds(const std::string& text) {
  const auto dot = text.find('.');
  if (dot != std::string::npos && text.find('.', dot + 1) != std::string::npos) return -1;
  const std::string whole = text.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? "" : text.substr(dot + 1);
  if (text.size() > 18 || (whole.empty() && fraction.empty())) return -1;
  const int64_t w = whole.empty() ? 0 : decimal_digits(whole);
  const int64_t f = fraction.empty() ? 0 : decimal_digits(fraction);
  if (w < 0 || f < 0) return -1;
  double scale = 1;
  for (std::size_t i = 0; i < fraction.size(); ++i) scale *= 10;
  return static_cast<double>(w) + static_cast<double>(f) / scale;
}

}  // namespace petra::config

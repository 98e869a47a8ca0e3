// The plain decimal numbers inside config entries ("32:3>sim:0", "64:2>3"): one reader for them.
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

}  // namespace petra::config

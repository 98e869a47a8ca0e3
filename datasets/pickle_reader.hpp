// A reader of the subset of Python's pickle format (protocols 2 to 5) that numpy-holding dicts
// use: containers, ints, floats, strings, bytes, globals and the REDUCE/BUILD object protocol.
// Nothing is executed: an object is kept as (callable, arguments, state) for the caller to interpret.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace petra::data {

struct pickle_value;
using pickle_ptr = std::shared_ptr<pickle_value>;

/// One unpickled value. Bytes are a view into the pickle's buffer (which must outlive the value)
/// or, when a conversion made them, held in `owned`.
struct pickle_value {
  enum class kind { none, boolean, integer, real, text, bytes, list, tuple, dict, global, object };
  kind type = kind::none;
  int64_t integer = 0;            // boolean (0/1) and integer
  double real = 0;                // real
  std::string text;               // text; global: "module.name"
  const uint8_t* data = nullptr;  // bytes
  std::size_t size = 0;
  std::vector<uint8_t> owned;
  std::vector<pickle_ptr> items;          // list, tuple; dict: key, value, key, value, …
  pickle_ptr callable, arguments, state;  // object: callable(*arguments), then __setstate__(state)

  /// Text, or bytes read as Latin-1 text (Python 2 `str` keys arrive as bytes).
  bool is_string() const { return type == kind::text || type == kind::bytes; }
  std::string as_string() const;
  /// The value of dict key `key` (text or bytes), or nullptr.
  pickle_ptr find(const std::string& key) const;
};

/// A short description for messages: "a dict with keys data, labels", "a list of 10 items",
/// "an object made by numpy.core.multiarray._reconstruct".
std::string describe(const pickle_value& value);

/// Unpickles `bytes` (a whole pickle); any opcode outside the subset, a truncated stream or a
/// malformed one is a dataset_error naming `path`, the opcode and its offset.
pickle_ptr read_pickle(const std::vector<uint8_t>& bytes, const std::string& path);

}  // namespace petra::data

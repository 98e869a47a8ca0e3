// pickle_value's accessors and the descriptions error messages use.
#include "datasets/pickle_reader.hpp"

namespace petra::data {

using kind = pickle_value::kind;

std::string pickle_value::as_string() const {
  if (type == kind::text) return text;
  if (type == kind::bytes) return std::string(reinterpret_cast<const char*>(data), size);
  return {};
}

pickle_ptr pickle_value::find(const std::string& key) const {
  if (type != kind::dict) return nullptr;
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i]->is_string() && items[i]->as_string() == key) return items[i + 1];
  }
  return nullptr;
}

std::string describe(const pickle_value& v) {
  switch (v.type) {
    case kind::none:
      return "None";
    case kind::boolean:
      return v.integer ? "True" : "False";
    case kind::integer:
      return "the integer " + std::to_string(v.integer);
    case kind::real:
      return "a float";
    case kind::text:
      return "the string '" + (v.text.size() > 40 ? v.text.substr(0, 40) + "…" : v.text) + "'";
    case kind::bytes:
      return "bytes of length " + std::to_string(v.size);
    case kind::list:
      return "a list of " + std::to_string(v.items.size()) + " items";
    case kind::tuple:
      return "a tuple of " + std::to_string(v.items.size()) + " items";
    case kind::dict: {
      std::string keys;
      for (std::size_t i = 0; i + 1 < v.items.size(); i += 2) {
        keys += (keys.empty() ? "" : ", ") +
                (v.items[i]->is_string() ? v.items[i]->as_string() : describe(*v.items[i]));
      }
      return keys.empty() ? "an empty dict" : "a dict with keys " + keys;
    }
    case kind::global:
      return "the global " + v.text;
    case kind::object:
      return "an object made by " +
             (v.callable && v.callable->type == kind::global ? v.callable->text : "a call");
  }
  return "a value";
}

}  // namespace petra::data

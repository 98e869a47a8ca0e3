// Reading described records: where a field is, and what is wrong with it.
#include "training/json_record.hpp"

namespace petra::json_record {

const nlohmann::json* reader::find(const char* name, presence p) const {
  const auto it = in_.find(name);
  if (it == in_.end() || it->is_null()) {
    if (p == presence::required) fail(where_, std::string("\"") + name + "\" is missing");
    return nullptr;
  }
  return &*it;
}

void reader::counts(const char* name, std::map<int64_t, int64_t>& h, presence p) {
  const nlohmann::json* j = find(name, p);
  if (!j) return;
  const std::string key = std::string("\"") + name + "\"";
  if (!j->is_object()) fail(where_, key + " must be an object {\"value\": count}");
  h.clear();
  for (auto bucket = j->begin(); bucket != j->end(); ++bucket) {
    std::size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(bucket.key(), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != bucket.key().size())
      fail(where_, key + " has the key \"" + bucket.key() + "\", expected an integer");
    if (!bucket.value().is_number_integer())
      fail(where_, key + " has a count " + bucket.value().dump() + ", expected an integer");
    h[value] += bucket.value().get<int64_t>();  // "7" and "07" are one value
  }
}

void reader::fail(const std::string& where, const std::string& what) {
  throw field_error(where.empty() ? what : where + ": " + what);
}

std::string reader::shown(const nlohmann::json& j) {
  const std::string text = j.dump();
  return text.size() > 80 ? text.substr(0, 80) + "..." : text;
}

std::string reader::element_where(const std::string& where, const std::string& name,
                                  const nlohmann::json& j) {
  const std::string prefix = where.empty() ? "" : where + ", ";
  const auto stage = j.find("stage");
  if (stage != j.end() && stage->is_number_integer() && name.find('[') != std::string::npos)
    return prefix + "stage " + std::to_string(stage->get<int64_t>());
  return prefix + name;
}

}  // namespace petra::json_record

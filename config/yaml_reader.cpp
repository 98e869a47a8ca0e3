// Reads YAML nodes into the typed fields of run_config: strict types, unknown keys rejected, every
// message naming the YAML path and where the value came from.
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "config/schema.hpp"

namespace petra::config::detail {
namespace {

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

// from_chars over the whole text; YAML allows a leading '+', from_chars does not.
template <class Number>
bool parse_number(const YAML::Node& node, Number& out) {
  if (!node.IsScalar()) return false;
  std::string text = node.Scalar();
  if (!text.empty() && text[0] == '+') text.erase(0, 1);
  const char* end = text.data() + text.size();
  auto [stop, status] = std::from_chars(text.data(), end, out);
  return status == std::errc() && stop == end && !text.empty();
}

bool decode(const YAML::Node& node, int64_t& out) { return parse_number(node, out); }
bool decode(const YAML::Node& node, uint64_t& out) { return parse_number(node, out); }
bool decode(const YAML::Node& node, int& out) { return parse_number(node, out); }
bool decode(const YAML::Node& node, double& out) { return parse_number(node, out) && std::isfinite(out); }
bool decode(const YAML::Node& node, float& out) { return parse_number(node, out) && std::isfinite(out); }
bool decode(const YAML::Node& node, bool& out) {
  return node.IsScalar() && YAML::convert<bool>::decode(node, out);
}
bool decode(const YAML::Node& node, std::string& out) {
  if (node.IsNull()) {  // `name:` with nothing after it
    out.clear();
    return true;
  }
  if (!node.IsScalar()) return false;
  out = node.Scalar();
  return true;
}

const char* expected(const int*) { return "an integer"; }
const char* expected(const int64_t*) { return "an integer"; }
const char* expected(const uint64_t*) { return "a non-negative integer"; }
const char* expected(const double*) { return "a number"; }
const char* expected(const float*) { return "a number"; }
const char* expected(const bool*) { return "true or false"; }
const char* expected(const std::string*) { return "a string"; }

const char* expected_list(const int*) { return "a list of integers, e.g. [1, 2, 3]"; }
const char* expected_list(const int64_t*) { return "a list of integers, e.g. [200, 399]"; }
const char* expected_list(const float*) { return "a list of numbers, e.g. [0.5, 0.25]"; }
const char* expected_list(const double*) { return "a list of numbers, e.g. [150, 225]"; }
const char* expected_list(const std::string*) { return "a list of strings, e.g. [cpu, cuda:0]"; }

[[noreturn]] void fail_type(const std::string& path, const std::string& where, const std::string& wanted,
                            const YAML::Node& node) {
  throw config_error(path + " " + where + ": expected " + wanted + ", got " + describe(node));
}

template <class Value>
void read_value(const YAML::Node& node, const std::string& where, const std::string& path, const origin&,
                Value& out) {
  if constexpr (is_choice<Value>::value) {  // a name of its table; `stem:` alone is the empty name
    if (!node.IsScalar() && !node.IsNull()) fail_type(path, where, "a string", node);
    try {
      out = parse_choice<Value>(node.IsNull() ? std::string() : node.Scalar());
    } catch (const config_error& e) {
      throw config_error(path + " " + where + ": " + e.what());
    }
  } else {
    Value value;
    if (!decode(node, value)) fail_type(path, where, expected(&value), node);
    out = value;
  }
}

template <class Value>
void read_value(const YAML::Node& node, const std::string& where, const std::string& path, const origin& from,
                std::vector<Value>& out) {
  // The presets' scalar `threads: 2` is runtime.threads (the scheduler's); pipeline.threads is one
  // count per stage, in YAML and --set alike.
  if (!node.IsSequence() && path == "pipeline.threads")
    fail_type(
        path, where,
        "a list of compute threads per stage, e.g. [2, 1, 1] (the scalar `threads: 2` of the presets is "
        "runtime.threads, the scheduler's threads)",
        node);
  if (!node.IsSequence()) fail_type(path, where, expected_list(static_cast<Value*>(nullptr)), node);
  std::vector<Value> values(node.size());
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node element = node[i];
    if (!decode(element, values[i])) {
      std::string element_where = from.has_lines ? from.where(element.Mark()) : where;
      fail_type(path + "[" + std::to_string(i) + "]", element_where, expected(&values[i]), element);
    }
  }
  out = std::move(values);
}

void read_value(const YAML::Node& node, const std::string& where, const std::string& path, const origin&,
                std::vector<device_spec>& out) {
  if (!node.IsSequence()) fail_type(path, where, expected_list(static_cast<std::string*>(nullptr)), node);
  std::vector<device_spec> devices(node.size());
  for (size_t i = 0; i < node.size(); ++i) {
    std::string name;
    if (!decode(node[i], name))
      fail_type(path + "[" + std::to_string(i) + "]", where, "a device name", node[i]);
    try {
      devices[i] = parse_device(name);
    } catch (const config_error& e) {
      throw config_error(path + " " + where + ": entry " + std::to_string(i) + " " + e.what());
    }
  }
  out = std::move(devices);
}

void read_value(const YAML::Node& node, const std::string& where, const std::string& path, const origin&,
                std::vector<block_move>& out) {
  if (!node.IsSequence()) fail_type(path, where, expected_list(static_cast<std::string*>(nullptr)), node);
  std::vector<block_move> moves(node.size());
  for (size_t i = 0; i < node.size(); ++i) {
    std::string text;
    if (!decode(node[i], text))
      fail_type(path + "[" + std::to_string(i) + "]", where, "a move 'position:from>to'", node[i]);
    try {
      moves[i] = parse_block_move(text);
    } catch (const config_error& e) {
      throw config_error(path + " " + where + ": entry " + std::to_string(i) + " " + e.what());
    }
  }
  out = std::move(moves);
}

void read_value(const YAML::Node& node, const std::string& where, const std::string& path, const origin&,
                std::vector<stage_migration>& out) {
  if (!node.IsSequence()) fail_type(path, where, expected_list(static_cast<std::string*>(nullptr)), node);
  std::vector<stage_migration> entries(node.size());
  for (size_t i = 0; i < node.size(); ++i) {
    std::string text;
    if (!decode(node[i], text))
      fail_type(path + "[" + std::to_string(i) + "]", where, "a migration 'position:stage>target'", node[i]);
    try {
      entries[i] = parse_stage_migration(text);
    } catch (const config_error& e) {
      throw config_error(path + " " + where + ": entry " + std::to_string(i) + " " + e.what());
    }
  }
  out = std::move(entries);
}

}  // namespace

void read_field(const YAML::Node& node, const YAML::Mark& mark, field& target, const std::string& path,
                const origin& from, source_map& sources) {
  const std::string where = from.where(mark);
  std::visit([&](auto* value) { read_value(node, where, path, from, *value); }, target.value);
  sources[path] = where;
}

namespace {

// `nodes:` as a whole: the value replaces every entry (nothing or {} = no nodes); each entry reads like a
// section.
void read_entries(const YAML::Node& node, const YAML::Mark& mark, node_map& target, const std::string& path,
                  const origin& from, source_map& sources) {
  if (!node.IsNull() && !node.IsMap())
    fail_type(path, from.where(mark), "a mapping from node names to {address, cert, key, ca}", node);
  // A replaced map leaves nothing of the old entries behind, their sources included.
  const std::string prefix = path + ".";
  for (auto it = sources.lower_bound(prefix);
       it != sources.end() && it->first.compare(0, prefix.size(), prefix) == 0;)
    it = sources.erase(it);
  node_map entries;
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const YAML::Node& key_node = entry.first;
      const YAML::Mark key_mark = key_node.Mark();
      if (!key_node.IsScalar())
        throw config_error(path + " " + from.where(key_mark) + ": a node name must be a plain name, got " +
                           describe(key_node));
      const std::string name = key_node.Scalar();
      const std::string entry_path = join_path(path, name);
      const std::string problem = node_name_problem(name);
      if (!problem.empty()) throw config_error(entry_path + " " + from.where(key_mark) + ": " + problem);
      if (entries.count(name) != 0)
        throw config_error(entry_path + " " + from.where(key_mark) +
                           ": duplicate node name; each may appear once");
      section layout = node_schema(entries[name]);
      sources[entry_path] = from.where(key_mark);
      read_section(entry.second, key_mark, layout, entry_path, from, sources);
    }
  }
  target = std::move(entries);
  sources[path] = from.where(mark);
}

}  // namespace

void read_section(const YAML::Node& node, const YAML::Mark& mark, section& target, const std::string& path,
                  const origin& from, source_map& sources) {
  if (target.entries != nullptr) return read_entries(node, mark, *target.entries, path, from, sources);
  if (node.IsNull()) return;  // `model:` with every key commented out keeps the defaults
  if (!node.IsMap()) {
    if (path.empty())
      throw config_error(from.place(mark) + ": expected a mapping of sections (" + known_keys(target) +
                         "), got " + describe(node));
    fail_type(path, from.where(mark), "a mapping with keys " + known_keys(target), node);
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const YAML::Node& key_node = entry.first;
    const YAML::Mark key_mark = key_node.Mark();
    if (!key_node.IsScalar())
      throw config_error((path.empty() ? "top level" : path) + " " + from.where(key_mark) +
                         ": a key must be a plain name, got " + describe(key_node));
    const std::string key = key_node.Scalar();
    const std::string key_path = join_path(path, key);
    if (!seen.insert(key).second)
      throw config_error(key_path + " " + from.where(key_mark) + ": duplicate key; each key may appear once");

    if (field* f = find_field(target, key))
      read_field(entry.second, key_mark, *f, key_path, from, sources);
    else if (section* child = find_section(target, key))
      read_section(entry.second, key_mark, *child, key_path, from, sources);
    else
      throw unknown_key(target, path, key, from, key_mark);
  }
}

}  // namespace petra::config::detail

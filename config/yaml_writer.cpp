// to_yaml: the resolved config, every field, in the layout load_config reads; numbers in their shortest
// exact form, so writing and reading again gives the same values bit for bit.
#include <array>
#include <cctype>
#include <charconv>
#include <sstream>

#include "config/schema.hpp"

namespace petra::config {
using namespace detail;

namespace {

std::string format(int value) { return std::to_string(value); }
std::string format(int64_t value) { return std::to_string(value); }
std::string format(uint64_t value) { return std::to_string(value); }
std::string format(bool value) { return value ? "true" : "false"; }

template <class Real>
std::string format_real(Real value) {
  std::array<char, 64> buffer;
  auto [end, status] =
      std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);  // shortest round trip
  (void)status;
  return std::string(buffer.data(), end);
}
std::string format(double value) { return format_real(value); }
std::string format(float value) { return format_real(value); }

// A plain scalar when YAML reads it back as the same string (names, paths, cuda:0), else double-quoted.
std::string format(const std::string& value) {
  static const std::array<const char*, 9> reserved = {"null", "true", "false", "yes", "no",
                                                      "on",   "off",  "y",     "n"};
  std::string lower;
  for (char c : value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool plain = !value.empty() && (std::isalpha(static_cast<unsigned char>(value[0])) || value[0] == '/');
  for (const char* word : reserved) plain = plain && lower != word;
  for (char c : value)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) ||
                      std::string("_-./:").find(c) != std::string::npos);
  plain = plain && value.back() != ':';  // "name:" would read as a mapping
  if (plain) return value;
  std::string quoted = "\"";
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      const char* hex = "0123456789abcdef";
      quoted += "\\x";
      quoted += hex[byte >> 4];
      quoted += hex[byte & 0xf];
    } else {
      quoted += c;  // UTF-8 bytes pass through
    }
  }
  return quoted + "\"";
}

template <class Choice, std::enable_if_t<is_choice<Choice>::value, int> = 0>
std::string format(Choice value) {
  return format(to_string(value));
}
std::string format(const device_spec& value) { return format(value.str()); }
std::string format(const block_move& value) { return format(value.str()); }
std::string format(const stage_migration& value) { return format(value.str()); }

template <class Value>
std::string format(const std::vector<Value>& values) {
  std::string list = "[";
  for (size_t i = 0; i < values.size(); ++i) list += (i ? ", " : "") + format(values[i]);
  return list + "]";
}

void write_section(std::ostringstream& out, const section& s, const std::string& indent);

// `nodes:` sorted by name (the map's order), every key of every entry; no entries is `{}`.
void write_entries(std::ostringstream& out, const section& s, const std::string& indent) {
  if (s.entries->empty()) {
    out << indent << s.key << ": {}\n";
    return;
  }
  out << indent << s.key << ":\n";
  for (auto& [name, node] : *s.entries) {
    out << indent << "  " << format(name) << ":\n";
    write_section(out, node_schema(node), indent + "    ");
  }
}

void write_section(std::ostringstream& out, const section& s, const std::string& indent) {
  for (const field& f : s.fields)
    if (f.written)
      out << indent << f.key << ": " << std::visit([](auto* value) { return format(*value); }, f.value)
          << "\n";
  for (const section& child : s.sections) {
    if (!child.written) continue;
    if (child.entries != nullptr) {
      write_entries(out, child, indent);
      continue;
    }
    out << indent << child.key << ":\n";
    write_section(out, child, indent + "  ");
  }
}

/// The fields of `a` and `b` (the same layout over two configs) whose written values differ.
void compare_section(const section& a, const section& b, const std::string& path,
                     std::vector<key_change>& out) {
  for (std::size_t i = 0; i < a.fields.size(); ++i) {
    const auto text = [](const field& f) {
      return std::visit([](auto* value) { return format(*value); }, f.value);
    };
    const std::string before = text(a.fields[i]), after = text(b.fields[i]);
    if (before != after) out.push_back({join_path(path, a.fields[i].key), before, after});
  }
  for (std::size_t i = 0; i < a.sections.size(); ++i) {
    const section &x = a.sections[i], &y = b.sections[i];
    const std::string key = join_path(path, x.key);
    if (x.entries == nullptr) {
      compare_section(x, y, key, out);
      continue;
    }
    std::ostringstream before, after;  // the named nodes: one value, as written
    write_entries(before, x, "");
    write_entries(after, y, "");
    if (before.str() != after.str()) out.push_back({key, before.str(), after.str()});
  }
}

}  // namespace

std::vector<key_change> changed_keys(const run_config& before, const run_config& after) {
  run_config a = before, b = after;  // schema() points into mutable configs; comparing changes neither
  std::vector<key_change> out;
  compare_section(schema(a), schema(b), "", out);
  return out;
}

std::string to_yaml(const run_config& config) {
  run_config copy = config;  // schema() points into a mutable config; writing never changes it
  std::ostringstream out;
  out << "# petra run config, fully resolved (every field); load it again with `petra train <this file>`.\n";
  write_section(out, schema(copy), "");
  return out.str();
}

}  // namespace petra::config

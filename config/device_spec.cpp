// Device names (cpu, cuda:N, sim:N): parsed here once, into typed values.
#include <array>
#include <utility>

#include "config/config.hpp"

namespace petra::config {
namespace {

template <class Value, std::size_t N>
Value parse_kind(const std::array<std::pair<const char*, Value>, N>& names, const std::string& text) {
  for (const auto& [name, value] : names)
    if (text == name) return value;
  throw config_error("'" + text + "' is not a device kind");
}

template <class Value, std::size_t N>
std::string name_of(const std::array<std::pair<const char*, Value>, N>& names, Value value) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  return "?";
}

constexpr std::array<std::pair<const char*, device_spec::kind>, 3> device_kinds = {
    {{"cpu", device_spec::kind::cpu}, {"cuda", device_spec::kind::cuda}, {"sim", device_spec::kind::sim}}};

}  // namespace

std::string device_spec::str() const {
  const std::string kind_name = name_of(device_kinds, type);
  return type == kind::cpu ? kind_name : kind_name + ":" + std::to_string(index);
}

device_spec parse_device(const std::string& name) {
  const std::string help =
      "'" + name + "' is not a device: write cpu, cuda:N (GPU N) or sim:N (simulated device N)";
  if (name == "cpu") return {};
  const auto colon = name.find(':');
  if (colon == std::string::npos || colon + 1 == name.size() || colon + 5 < name.size())
    throw config_error(help);
  device_spec out;
  const std::string kind_name = name.substr(0, colon);
  if (kind_name == "cpu") throw config_error(help);
  try {
    out.type = parse_kind(device_kinds, kind_name);
  } catch (const config_error&) {
    throw config_error(help);
  }
  out.index = 0;
  for (std::size_t i = colon + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') throw config_error(help);
    out.index = out.index * 10 + (name[i] - '0');
  }
  return out;
}

}  // namespace petra::config

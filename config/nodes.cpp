// The `nodes:` map: names for `petra node` processes, their addresses and TLS files, and how a
// pipeline.nodes entry (local, host:port or such a name) resolves to an address.
#include <algorithm>

#include "config/schema.hpp"

namespace petra::config {
namespace detail {

std::string node_name_problem(const std::string& name) {
  if (name == "local")
    return "'local' is reserved (it means this process in pipeline.nodes); pick another name, e.g. local1";
  if (name.find(':') != std::string::npos)
    return "'" + name +
           "' looks like host:port; a node's name is a plain word (e.g. gpu1) and its address goes under"
           " address:";
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!plain) return "'" + name + "' is not a node name; use letters, digits, '_' and '-' only (e.g. gpu1)";
  return "";
}

bool is_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
  const std::string port = text.substr(colon + 1);
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const int value = std::stoi(port);
  return value >= 1 && value <= 65535;
}

std::string known_node_names(const node_map& nodes) {
  if (nodes.empty()) return "no names are defined";
  std::string names;
  for (const auto& [name, node] : nodes) names += (names.empty() ? "" : ", ") + name;
  return "known names: " + names;
}

void validate_nodes(const node_map& nodes, const source_map& sources) {
  auto where = [&sources](const std::string& path) {
    auto it = sources.find(path);
    return it == sources.end() ? std::string("(default)") : it->second;
  };
  for (const auto& [name, node] : nodes) {
    const std::string path = "nodes." + name;
    const std::string problem = node_name_problem(name);  // a config built in code skips the reader's check
    if (!problem.empty()) throw config_error(path + " " + where(path) + ": " + problem);
    if (node.address.empty())
      throw config_error(path + " " + where(path) +
                         ": has no address; give the host:port its `petra node` listens on, e.g. address: "
                         "\"10.0.0.2:7001\"");
    if (!is_host_port(node.address))
      throw config_error(path + ".address " + where(path + ".address") + ": '" + node.address +
                         "' is not host:port (port 1-65535) of a `petra node`");
    const bool tls[] = {!node.cert.empty(), !node.key.empty(), !node.ca.empty()};
    if (std::count(std::begin(tls), std::end(tls), true) % 3 != 0) {
      std::string missing;
      const char* keys[] = {"cert", "key", "ca"};
      for (int i = 0; i < 3; ++i)
        if (!tls[i]) missing += (missing.empty() ? "" : ", ") + path + "." + keys[i];
      throw config_error(path + " " + where(path) + ": sets some TLS files but not " + missing +
                         "; a node's TLS needs its certificate, its key and the CA, all three (or none for a"
                         " plain listener)");
    }
  }
}

}  // namespace detail

std::string resolve_node_address(const run_config& config, const std::string& entry) {
  if (entry == "local" || detail::is_host_port(entry)) return entry;
  auto it = config.nodes.find(entry);
  if (it == config.nodes.end())
    throw config_error("node '" + entry + "' is not local, host:port or a name defined in nodes: (" +
                       detail::known_node_names(config.nodes) + ")");
  return it->second.address;
}

}  // namespace petra::config

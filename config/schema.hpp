// The YAML layout of run_config, shared by the reader, the writer and the validator (private to
// petra_config): one table of sections and fields, so a key is named once.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "config/config.hpp"

namespace petra::config::detail {

/// A pointer to one typed field of a run_config.
using field_ref =
    std::variant<int*, int64_t*, uint64_t*, double*, bool*, std::string*, std::vector<int>*,
                 std::vector<int64_t>*, std::vector<float>*, std::vector<double>*, std::vector<std::string>*,
                 std::vector<device_spec>*, std::vector<block_move>*, std::vector<stage_migration>*,
                 runtime_mode*, training_method*, model_arch*, stem_kind*, block_kind*, dataset_kind*,
                 bad_image_policy*, optimizer_kind*, lr_schedule*, config::tick_order*, async_pacing*,
                 compute_precision*, cudnn_search_mode*, recovery_scope*, gradient_guess*, gradient_target*>;

struct field {
  std::string key;
  field_ref value;
  bool written = true;  // to_yaml writes it (an optimizer's own keys only with that optimizer)
};

using node_map = std::map<std::string, node_config>;

/// A YAML mapping: its own fields, then nested sections (training.optimizer). A section with `entries`
/// (nodes:) instead maps names the user picks to entries laid out by node_schema.
struct section {
  std::string key;  // "" for the top level
  std::vector<field> fields;
  std::vector<section> sections;
  node_map* entries = nullptr;
  bool written = true;  // to_yaml writes it (a method's own section only with that method)
};

/// The whole layout, pointing into `config`: top level → model, data, training, pipeline, runtime, tls,
/// faults, output, testing, nodes.
section schema(run_config& config);

/// The layout of one entry of `nodes:`, pointing into `node`: address, cert, key, ca.
section node_schema(node_config& node);

/// Why `name` cannot name an entry of `nodes:` ("" when it can): [A-Za-z0-9_-]+, not "local".
std::string node_name_problem(const std::string& name);

/// host:port with a port in 1-65535 (the host is not resolved here).
bool is_host_port(const std::string& text);

/// "known names: cpu2, gpu1" or "no names are defined", for messages about an unknown node name.
std::string known_node_names(const node_map& nodes);

/// Where each value came from, by YAML path: "training.epochs" → "at runs/x.yaml:5" or
/// "in --set training.epochs=10". A path that is absent kept its default.
using source_map = std::map<std::string, std::string>;

/// Names a place in messages: a file (or text) whose nodes carry line marks, or an override.
struct origin {
  std::string name;                                 // "runs/x.yaml" or "--set training.epochs=10"
  bool has_lines;                                   // true for files and texts, false for overrides
  std::string place(const YAML::Mark& mark) const;  // "runs/x.yaml:5" or "--set training.epochs=10"
  std::string where(const YAML::Mark& mark) const;  // "at runs/x.yaml:5" or "in --set training.epochs=10"
};

/// The field or nested section of `s` named `key`, or nullptr.
field* find_field(section& s, const std::string& key);
section* find_section(section& s, const std::string& key);

/// "training.optimizer" + "base_lr" → "training.optimizer.base_lr"; "" + "model" → "model".
std::string join_path(const std::string& parent, const std::string& key);

/// Reads a YAML mapping into `target`, checking every key and type; records each value's source.
void read_section(const YAML::Node& node, const YAML::Mark& mark, section& target, const std::string& path,
                  const origin& from, source_map& sources);

/// Reads one value into `target` (same checks as in a file); `mark` locates it when the node has none.
void read_field(const YAML::Node& node, const YAML::Mark& mark, field& target, const std::string& path,
                const origin& from, source_map& sources);

/// The list of keys of a section, for messages: "model, data, training, ...".
std::string known_keys(const section& s);

/// The closest key of `s` to `key` when it looks like a typo, else "".
std::string closest_key(const section& s, const std::string& key);

/// The error for a key `s` does not have: names it, its place, the likely typo and the known keys.
config_error unknown_key(const section& s, const std::string& path, const std::string& key,
                         const origin& from, const YAML::Mark& mark);

/// Checks every value and every combination of values; throws config_error naming path and source.
void validate(const run_config& config, const source_map& sources);

/// Checks every entry of `nodes:`: an address that is host:port, TLS files all three or none.
void validate_nodes(const node_map& nodes, const source_map& sources);

}  // namespace petra::config::detail

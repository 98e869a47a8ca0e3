// load_config / parse_config: find the file or preset, parse it, apply --set overrides, validate.
// Loading only reads: a bad config leaves no file behind.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/schema.hpp"
#include "config/yaml_stream.hpp"

namespace petra::config {
namespace fs = std::filesystem;
using namespace detail;

std::string presets_dir() {
  const char* from_environment = std::getenv("PETRA_PRESETS");
  if (from_environment != nullptr && *from_environment != '\0') return from_environment;
  return PETRA_PRESETS_DIR;
}

namespace {

std::string available_presets(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(dir, ignored))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  if (names.empty()) return "none (the directory is missing or holds no .yaml file)";
  std::sort(names.begin(), names.end());
  std::string listed;
  for (const std::string& name : names) listed += (listed.empty() ? "" : ", ") + name;
  return listed;
}

/// A file that exists, else a bare name looked up as <presets_dir>/<name>.yaml.
std::string resolve(const std::string& path_or_preset) {
  if (fs::is_directory(path_or_preset))
    throw config_error("config file '" + path_or_preset + "' is a directory; name a .yaml file or a preset");
  if (fs::exists(path_or_preset)) return path_or_preset;
  const std::string dir = presets_dir();
  if (path_or_preset.find('/') == std::string::npos && !path_or_preset.empty()) {
    fs::path preset = fs::path(dir) / path_or_preset;
    if (preset.extension() != ".yaml") preset += ".yaml";
    if (fs::is_regular_file(preset)) return preset.string();
  }
  throw config_error("config file '" + path_or_preset + "' not found (and no preset of that name in " + dir +
                     ": available presets: " + available_presets(dir) + ")");
}

/// "training.epochs=10": the value is YAML, read into the field (or section) the dotted path names.
void apply_override(section& root, const std::string& text, source_map& sources) {
  const origin from{"--set " + text, false};
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    throw config_error("--set '" + text + "': expected path=value, e.g. --set training.epochs=10");
  const std::string path = text.substr(0, equals);
  const std::string value_text = text.substr(equals + 1);
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::ParserException& e) {
    throw config_error(path + " in " + from.name + ": the value is not valid YAML (" + e.msg + ")");
  }

  section* current = &root;
  section entry_layout;  // below nodes.NAME: the layout of that entry
  std::string walked;
  std::istringstream segments(path);
  std::string key;
  while (std::getline(segments, key, '.')) {
    const bool last = segments.peek() == std::char_traits<char>::eof();
    const std::string key_path = join_path(walked, key);
    if (field* f = find_field(*current, key)) {
      if (!last)
        throw config_error(key_path + " in " + from.name +
                           ": is a value, not a section; nothing lies below it");
      read_field(value, YAML::Mark(), *f, key_path, from, sources);
      return;
    }
    section* child = find_section(*current, key);
    if (child == nullptr) throw unknown_key(*current, walked, key, from, YAML::Mark());
    if (last) {
      read_section(value, YAML::Mark(), *child, key_path, from, sources);
      return;
    }
    walked = key_path;
    current = child;
    if (child->entries != nullptr) {
      // nodes.NAME...: edits that entry, created when absent (nodes=... replaces the whole map instead).
      std::string name;
      std::getline(segments, name, '.');
      const std::string entry_path = join_path(key_path, name);
      const std::string problem = node_name_problem(name);
      if (!problem.empty()) throw config_error(entry_path + " in " + from.name + ": " + problem);
      entry_layout = node_schema((*child->entries)[name]);
      sources.emplace(entry_path, from.where(YAML::Mark()));  // a new entry is named by this --set
      if (segments.peek() == std::char_traits<char>::eof()) {
        read_section(value, YAML::Mark(), entry_layout, entry_path, from, sources);
        return;
      }
      current = &entry_layout;
      walked = entry_path;
    }
  }
  throw config_error("--set '" + text + "': the path ends with '.'; name a key, e.g. training.epochs=10");
}

}  // namespace

run_config parse_config(const std::string& yaml_text, const std::string& origin_name,
                        const std::vector<std::string>& overrides) {
  const origin from{origin_name, true};
  yaml_stream_head head;
  try {
    head = read_stream_head(yaml_text);
  } catch (const YAML::ParserException& e) {
    // YAML indents with spaces only; yaml-cpp's words for a tab ("illegal map value") do not say so.
    std::istringstream lines(yaml_text);
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
      ++number;
      const std::size_t text = line.find_first_not_of(" \t");
      if (text == std::string::npos || line[text] == '#') continue;
      if (line.find('\t') < text) {
        YAML::Mark at;
        at.line = number - 1;
        throw config_error(from.place(at) + ": a tab in the indentation (column " +
                           std::to_string(line.find('\t') + 1) +
                           "); YAML indents with spaces only: replace the tabs with spaces");
      }
    }
    throw config_error(from.place(e.mark) + ": YAML syntax error at column " +
                       std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (head.first.IsNull())
    throw config_error(
        from.place(YAML::Mark()) +
        ": the config is empty; write at least one section (e.g. 'training: {epochs: 3}') or use a"
        " preset such as 'default'");
  if (head.has_second)
    throw config_error(from.place(head.second_mark) +
                       ": a second YAML document ('---'); a config is one document");

  run_config config;
  section root = schema(config);
  source_map sources;
  read_section(head.first, head.first.Mark(), root, "", from, sources);
  for (const std::string& text : overrides) apply_override(root, text, sources);
  validate(config, sources);
  config.sources = std::move(sources);
  return config;
}

std::string where(const run_config& config, const std::string& path) {
  auto it = config.sources.find(path);
  return it == config.sources.end() ? "(default)" : it->second;
}

bool is_set(const run_config& config, const std::string& path) { return config.sources.count(path) != 0; }

run_config load_config(const std::string& path_or_preset, const std::vector<std::string>& overrides) {
  const std::string file = resolve(path_or_preset);
  std::ifstream in(file, std::ios::binary);
  if (!in.is_open())
    throw config_error("config file '" + file + "' could not be read; check its permissions");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), file, overrides);
}

}  // namespace petra::config

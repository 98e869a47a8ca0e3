// The documentation's claims that a test can hold it to: the config example of docs/config.md is a
// config petra loads and names every key, the README's minimal config loads, and every relative link
// of README.md and docs/*.md points to a file of the repository.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace {
namespace fs = std::filesystem;

std::string readme_text_of(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The first ```yaml block of `text` at or after `from`.
std::string yaml_block(const std::string& text, std::size_t from = 0) {
  const auto begin = text.find("```yaml\n", from);
  REQUIRE(begin != std::string::npos);
  const auto end = text.find("```", begin + 8);
  REQUIRE(end != std::string::npos);
  return text.substr(begin + 8, end - begin - 8);
}

}  // namespace

TEST_CASE("docs/config.md: its config example loads") {
  const std::string yaml = yaml_block(readme_text_of(PETRA_SOURCE_DIR "/docs/config.md"));
  petra::config::run_config c;
  CHECK_NOTHROW(c = petra::config::parse_config(yaml, "docs/config.md"));
  // What the example says is what the config holds.
  CHECK(c.runtime.mode == petra::config::runtime_mode::async);
  CHECK(c.output.progress);
  CHECK(c.model.arch == petra::config::model_arch::fashion_small);
  CHECK(c.nodes.count("gpu1") == 1);
}

TEST_CASE("docs/config.md: its example names every key of a run's config.yaml") {
  const std::string example = yaml_block(readme_text_of(PETRA_SOURCE_DIR "/docs/config.md"));
  // Every section written, the method's own (forward_gradient), an optimizer's own and a named node
  // included.
  petra::config::run_config c;
  c.training.method = petra::config::training_method::forward_gradient;
  c.nodes["gpu1"] = petra::config::node_config{"10.0.0.2:7001", "gpu1.pem", "gpu1.key", "ca.pem"};
  const YAML::Node written = YAML::Load(petra::config::to_yaml(c));
  int keys = 0;
  std::function<void(const YAML::Node&, const std::string&)> visit = [&](const YAML::Node& node,
                                                                         const std::string& path) {
    if (!node.IsMap()) return;
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      const std::string at = path.empty() ? key : path + "." + key;
      ++keys;
      // A key is named as "key:" in the example (the forward_gradient section in a comment).
      CHECK_MESSAGE(example.find(key + ":") != std::string::npos, at, " is missing from docs/config.md");
      visit(entry.second, at);
    }
  };
  visit(written, "");
  CHECK(keys > 80);
  // AdamW's own keys (written only with kind adamw).
  c.training.optimizer.kind = petra::config::optimizer_kind::adamw;
  visit(YAML::Load(petra::config::to_yaml(c))["training"]["optimizer"], "training.optimizer");
}

TEST_CASE("README.md: its minimal config loads") {
  const std::string readme = readme_text_of(PETRA_SOURCE_DIR "/README.md");
  petra::config::run_config c;
  CHECK_NOTHROW(c = petra::config::parse_config(yaml_block(readme), "README.md"));
  CHECK(c.runtime.mode == petra::config::runtime_mode::async);
}

TEST_CASE("README.md and docs/*.md: every relative link points to a file of the repository") {
  std::vector<fs::path> pages{fs::path(PETRA_SOURCE_DIR) / "README.md"};
  for (const auto& entry : fs::directory_iterator(fs::path(PETRA_SOURCE_DIR) / "docs"))
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  REQUIRE(pages.size() > 10);
  const std::regex link(R"(\]\(([^)\s]+)\))");
  int links = 0;
  for (const fs::path& page : pages) {
    const std::string text = readme_text_of(page);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      std::string target = (*it)[1].str();
      if (target.rfind("http", 0) == 0 || target.rfind("mailto:", 0) == 0 || target[0] == '#') continue;
      target = target.substr(0, target.find('#'));
      ++links;
      CHECK_MESSAGE(fs::exists(page.parent_path() / target), page.filename().string(), " links to ", target,
                    ", which does not exist");
    }
  }
  CHECK(links > 50);
}

// The README's claims that a test can hold it to: its config example is a config petra loads.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "config/config.hpp"

TEST_CASE("README: the config example under 'Config' loads, every key in its section") {
  std::ifstream in(PETRA_SOURCE_DIR "/README.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const auto section = readme.find("## Config");
  REQUIRE(section != std::string::npos);
  const auto begin = readme.find("```yaml\n", section);
  REQUIRE(begin != std::string::npos);
  const auto end = readme.find("```", begin + 8);
  REQUIRE(end != std::string::npos);
  const std::string yaml = readme.substr(begin + 8, end - begin - 8);
  petra::config::run_config c;
  CHECK_NOTHROW(c = petra::config::parse_config(yaml, "README.md"));
  // What the example says is what the config holds.
  CHECK(c.runtime.mode == petra::config::runtime_mode::async);
  CHECK(c.output.progress);
  CHECK(c.model.arch == petra::config::model_arch::fashion_small);
  CHECK(c.nodes.count("gpu1") == 1);
}

// Fuzz target: `--set key=value` parsing on top of the default preset (as `petra train default
// --set ...` does); the input holds one override per line.
#include <vector>

#include "config/config.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::vector<std::string> overrides(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\n')
      overrides.emplace_back();
    else
      overrides.back() += static_cast<char>(data[i]);
  }
  try {
    const petra::config::run_config config = petra::config::load_config("default", overrides);
    petra::config::parse_config(petra::config::to_yaml(config), "fuzz-resolved.yaml");
  } catch (const petra::config::config_error&) {
  }
  return 0;
}

// Fuzz target: the YAML config loader with its schema and validation; the input is the file's text.
#include "config/config.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const petra::config::run_config config = petra::config::parse_config(text, "fuzz.yaml");
    // What was accepted must write back as YAML the loader accepts again.
    petra::config::parse_config(petra::config::to_yaml(config), "fuzz-resolved.yaml");
  } catch (const petra::config::config_error&) {
  }
  return 0;
}

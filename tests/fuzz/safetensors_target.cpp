// Fuzz target: the safetensors reader (header length, JSON header, offsets, dtypes, shapes).
#include "compute/serialize/safetensors.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string path = petra::fuzz::write_scratch_file("input.safetensors", data, size);
  try {
    const petra::safetensors_file file = petra::load_safetensors(path);
    for (const auto& [name, value] : file.tensors)
      if (name.empty() && value.numel() < 0) __builtin_trap();
  } catch (const petra::safetensors_error&) {
  }
  return 0;
}

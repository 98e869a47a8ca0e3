// Fuzz target: the checkpoint reader (a safetensors file whose metadata says which tensors belong
// to which stage); the first byte picks the pipeline's stage count, 1 to 8.
#include <stdexcept>

#include "tests/fuzz/fuzz_target.hpp"
#include "training/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t stage_count = data[0] % 8 + 1;
  const std::string path = petra::fuzz::write_scratch_file("checkpoint.safetensors", data + 1, size - 1);
  try {
    const petra::checkpoint read = petra::read_checkpoint(path, stage_count);
    if (read.stages.size() != stage_count) __builtin_trap();
  } catch (const std::runtime_error&) {  // read_checkpoint's documented error (safetensors_error is one)
  }
  return 0;
}

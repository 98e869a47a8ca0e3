// Fuzz target: the ImageNet32 batch reader (pickle protocols 2 to 5 holding numpy arrays).
#include "datasets/imagenet32.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string path = petra::fuzz::write_scratch_file("val_data", data, size);
  try {
    const petra::data::dataset d = petra::data::read_imagenet32_batch(path);
    if (d.pixels.size() != static_cast<std::size_t>(d.count * d.image_size())) __builtin_trap();
  } catch (const petra::data::dataset_error&) {
  }
  return 0;
}

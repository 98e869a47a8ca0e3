// Fuzz target: the CIFAR-10 binary reader; the input is the test split's one file (plain or gzip).
#include "datasets/cifar10.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  petra::fuzz::write_scratch_file("test_batch.bin", data, size);
  try {
    const petra::data::dataset d = petra::data::load_cifar10(petra::fuzz::scratch_dir(), false);
    if (d.pixels.size() != static_cast<std::size_t>(d.count * d.image_size())) __builtin_trap();
  } catch (const petra::data::dataset_error&) {
  }
  return 0;
}

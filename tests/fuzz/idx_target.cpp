// Fuzz target: the IDX reader (images and labels file, plain or gzip). The input is a 2-byte
// little-endian length L, L bytes of the labels file, then the images file.
#include <algorithm>

#include "datasets/idx.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t labels_size = std::min<std::size_t>(data[0] | std::size_t{data[1]} << 8, size - 2);
  const std::string labels = petra::fuzz::write_scratch_file("labels-idx1-ubyte", data + 2, labels_size);
  const std::string images =
      petra::fuzz::write_scratch_file("images-idx3-ubyte", data + 2 + labels_size, size - 2 - labels_size);
  try {
    const petra::data::dataset d = petra::data::load_idx(images, labels, 10);
    if (d.pixels.size() != static_cast<std::size_t>(d.count * d.image_size())) __builtin_trap();
  } catch (const petra::data::dataset_error&) {
  }
  return 0;
}

// Fuzz target: JPEG decoding as the ImageNet folder reader does it: the header, then the image at
// full size and at the DCT scale a small crop would pick.
#include "datasets/jpeg.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  petra::data::jpeg_decoder decoder;
  try {
    const petra::data::jpeg_header header = decoder.read_header(data, size);
    for (const petra::data::jpeg_scale scale :
         {petra::data::jpeg_scale{1, 1}, petra::data::jpeg_scale{1, 8}}) {
      petra::data::rgb_image image;
      decoder.decode(data, size, scale, image);
      const int width = petra::data::scaled_size(header.width, scale);
      const int height = petra::data::scaled_size(header.height, scale);
      if (image.width != width || image.height != height ||
          image.pixels.size() != static_cast<std::size_t>(width) * height * 3)
        __builtin_trap();
    }
  } catch (const petra::data::jpeg_error&) {
  }
  return 0;
}

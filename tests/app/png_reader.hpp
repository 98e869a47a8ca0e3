// A minimal PNG reader for tests: signature, IHDR, and the pixels of 8-bit non-interlaced images
// (IDAT inflated with zlib, scanline filters undone), enough to tell a drawn image from a blank one.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace petra::test {

struct png_image {
  uint32_t width = 0, height = 0;
  int channels = 0;             // 1 grey/palette, 2 grey+alpha, 3 RGB, 4 RGBA
  std::vector<uint8_t> pixels;  // height rows of width·channels bytes
  const uint8_t* at(uint32_t x, uint32_t y) const { return &pixels[(size_t(y) * width + x) * channels]; }
};

inline uint32_t read_be32(const std::string& bytes, size_t at) {
  return (uint32_t(uint8_t(bytes[at])) << 24) | (uint32_t(uint8_t(bytes[at + 1])) << 16) |
         (uint32_t(uint8_t(bytes[at + 2])) << 8) | uint32_t(uint8_t(bytes[at + 3]));
}

/// Decodes `path`; throws std::runtime_error saying what is wrong (not a PNG, truncated chunk,
/// bad zlib data, an unsupported bit depth or interlacing).
inline png_image decode_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  static const char signature[] = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 33 || bytes.compare(0, 8, signature, 8) != 0)
    throw std::runtime_error(path + ": not a PNG");
  if (bytes.compare(12, 4, "IHDR") != 0) throw std::runtime_error(path + ": first chunk is not IHDR");
  png_image image;
  image.width = read_be32(bytes, 16);
  image.height = read_be32(bytes, 20);
  const int depth = uint8_t(bytes[24]), colour = uint8_t(bytes[25]), interlace = uint8_t(bytes[28]);
  if (depth != 8 || interlace != 0)
    throw std::runtime_error(path + ": only 8-bit non-interlaced PNGs are read");
  switch (colour) {
    case 0:
    case 3:
      image.channels = 1;
      break;
    case 4:
      image.channels = 2;
      break;
    case 2:
      image.channels = 3;
      break;
    case 6:
      image.channels = 4;
      break;
    default:
      throw std::runtime_error(path + ": unknown colour type " + std::to_string(colour));
  }
  std::string idat;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t length = read_be32(bytes, at);
    if (at + 12 + length > bytes.size()) throw std::runtime_error(path + ": truncated chunk");
    const std::string type = bytes.substr(at + 4, 4);
    if (type == "IDAT") idat += bytes.substr(at + 8, length);
    if (type == "IEND") break;
    at += 12 + length;
  }
  const size_t stride = size_t(image.width) * image.channels;
  std::vector<uint8_t> raw(image.height * (stride + 1));
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      raw_size != raw.size())
    throw std::runtime_error(path + ": IDAT does not inflate to " + std::to_string(raw.size()) + " bytes");
  image.pixels.resize(image.height * stride);
  const int bpp = image.channels;
  for (uint32_t y = 0; y < image.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* line = &raw[y * (stride + 1) + 1];
    uint8_t* out = &image.pixels[y * stride];
    const uint8_t* up = y > 0 ? &image.pixels[(y - 1) * stride] : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= size_t(bpp) ? out[i - bpp] : 0, b = up ? up[i] : 0,
                c = (up && i >= size_t(bpp)) ? up[i - bpp] : 0;
      int predicted = 0;
      switch (filter) {
        case 0:
          predicted = 0;
          break;
        case 1:
          predicted = a;
          break;
        case 2:
          predicted = b;
          break;
        case 3:
          predicted = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predicted = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
          break;
        }
        default:
          throw std::runtime_error(path + ": unknown filter " + std::to_string(filter));
      }
      out[i] = uint8_t(line[i] + predicted);
    }
  }
  return image;
}

}  // namespace petra::test

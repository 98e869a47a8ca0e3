// Test helpers: JPEGs written with TurboJPEG's compressor (RGB, grayscale, CMYK), TurboJPEG's own
// plain decode as the reference, and small ImageNet folder trees.
#pragma once

#include <turbojpeg.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/datasets/dataset_files.hpp"

namespace petra::data::testing {

/// A smooth, textured pattern of width×height pixels with `components` interleaved components
/// (3 = RGB, 1 = gray, 4 = CMYK), different for each `seed`: gradients plus a few stripes, like a photo
/// more than like noise, so JPEG sizes are realistic.
inline std::vector<uint8_t> pattern_image(int width, int height, int components, int seed) {
  std::vector<uint8_t> pixels(static_cast<std::size_t>(width) * height * components);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < components; ++c) {
        const int v = (x * (3 + c + seed % 5)) / 2 + (y * (2 + (seed + c) % 3)) +
                      40 * ((x / 16 + y / 24 + c) % 3) + 17 * seed + 31 * c + ((x * 7 + y * 13 + seed) % 11);
        pixels[(static_cast<std::size_t>(y) * width + x) * components + c] = static_cast<uint8_t>(v % 256);
      }
    }
  }
  return pixels;
}

/// TurboJPEG's compressor on `pixels` (pixel_format TJPF_RGB, TJPF_GRAY or TJPF_CMYK).
inline std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& pixels, int width, int height,
                                        int pixel_format, int subsampling, int quality) {
  tjhandle handle = tjInitCompress();
  if (handle == nullptr) throw std::runtime_error("test helper: tjInitCompress failed");
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, pixels.data(), width, 0, height, pixel_format, &buffer, &size,
                             subsampling, quality, 0);
  std::vector<uint8_t> jpeg;
  if (rc == 0) jpeg.assign(buffer, buffer + size);
  const std::string error = rc == 0 ? "" : tjGetErrorStr2(handle);
  tjFree(buffer);
  tjDestroy(handle);
  if (rc != 0) throw std::runtime_error("test helper: tjCompress2 failed: " + error);
  return jpeg;
}

/// The colour spaces the tests write.
enum class jpeg_kind { rgb, gray, cmyk };

/// A JPEG of the pattern in `kind` (RGB 4:2:0, grayscale, or CMYK stored as YCCK).
inline std::vector<uint8_t> pattern_jpeg(int width, int height, jpeg_kind kind, int seed, int quality = 90) {
  switch (kind) {
    case jpeg_kind::rgb:
      return encode_jpeg(pattern_image(width, height, 3, seed), width, height, TJPF_RGB, TJSAMP_420, quality);
    case jpeg_kind::gray:
      return encode_jpeg(pattern_image(width, height, 1, seed), width, height, TJPF_GRAY, TJSAMP_GRAY,
                         quality);
    case jpeg_kind::cmyk:
      return encode_jpeg(pattern_image(width, height, 4, seed), width, height, TJPF_CMYK, TJSAMP_444,
                         quality);
  }
  return {};
}

/// TurboJPEG's own plain decode at width×height (the full or a scaled size): RGB for colour and
/// grayscale images (gray expanded to R = G = B by libjpeg-turbo), and for CMYK images the CMYK
/// pixels converted with the documented R = round(C·K/255) (likewise G with M, B with Y).
inline std::vector<uint8_t> reference_rgb(const std::vector<uint8_t>& jpeg, int width, int height) {
  tjhandle handle = tjInitDecompress();
  int full_width = 0, full_height = 0, subsampling = 0, colorspace = 0;
  tjDecompressHeader3(handle, jpeg.data(), static_cast<unsigned long>(jpeg.size()), &full_width, &full_height,
                      &subsampling, &colorspace);
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  std::vector<uint8_t> pixels(static_cast<std::size_t>(width) * height * (cmyk ? 4 : 3));
  const int rc = tjDecompress2(handle, jpeg.data(), static_cast<unsigned long>(jpeg.size()), pixels.data(),
                               width, 0, height, cmyk ? TJPF_CMYK : TJPF_RGB, 0);
  tjDestroy(handle);
  if (rc != 0) throw std::runtime_error("test helper: reference decode failed");
  if (!cmyk) return pixels;
  std::vector<uint8_t> rgb(static_cast<std::size_t>(width) * height * 3);
  for (std::size_t p = 0; p < rgb.size() / 3; ++p) {
    for (int c = 0; c < 3; ++c)
      rgb[3 * p + c] = static_cast<uint8_t>((pixels[4 * p + c] * pixels[4 * p + 3] + 127) / 255);
  }
  return rgb;
}

/// One image of a test tree: its size and colour space.
struct tree_image {
  int width, height;
  jpeg_kind kind;
};

/// The image j of class k in a test tree: sizes and colour spaces cycle through a varied list.
inline tree_image tree_image_at(int k, int j) {
  static const tree_image kinds[] = {
      {120, 90, jpeg_kind::rgb}, {64, 80, jpeg_kind::gray}, {150, 100, jpeg_kind::rgb},
      {70, 70, jpeg_kind::cmyk}, {33, 47, jpeg_kind::rgb},  {200, 60, jpeg_kind::rgb},
      {90, 130, jpeg_kind::rgb}, {48, 48, jpeg_kind::gray}, {101, 77, jpeg_kind::cmyk}};
  return kinds[(3 * k + j) % 9];
}

/// Writes <root>/<split>/<wnid>/img_<j>.JPEG for each split, class and j < per_class; returns the wnids.
inline std::vector<std::string> write_jpeg_tree(const std::string& root, int classes, int per_class,
                                                const std::vector<std::string>& splits = {"train", "val"}) {
  std::vector<std::string> wnids;
  for (int k = 0; k < classes; ++k) wnids.push_back("n0" + std::to_string(1000000 + 37 * k));
  for (const std::string& split : splits) {
    for (int k = 0; k < classes; ++k) {
      for (int j = 0; j < per_class; ++j) {
        const tree_image image = tree_image_at(k, j);
        write_file(
            root + "/" + split + "/" + wnids[static_cast<std::size_t>(k)] + "/img_" + std::to_string(j) +
                ".JPEG",
            pattern_jpeg(image.width, image.height, image.kind, 10 * k + j + (split == "val" ? 500 : 0)));
      }
    }
  }
  return wnids;
}

/// The dominant colour of class k of a learnable tree (10 well-separated colours, then repeats).
inline std::array<int, 3> class_colour(int k) {
  static const int palette[10][3] = {{220, 40, 40},   {40, 200, 40},  {40, 60, 220},  {220, 220, 40},
                                     {200, 40, 200},  {40, 200, 200}, {240, 140, 20}, {120, 60, 20},
                                     {230, 230, 230}, {30, 30, 30}};
  return {palette[k % 10][0], palette[k % 10][1], palette[k % 10][2]};
}

/// A tree a small network learns quickly (for end-to-end tests): image j of class k is the class's
/// colour with stripes, brightness jitter and noise, at a size between 40×30 and 100×80, as RGB
/// JPEG, one image in seven CMYK to keep the colour spaces mixed. Returns the wnids.
inline std::vector<std::string> write_learnable_jpeg_tree(const std::string& root, int classes, int per_class,
                                                          const std::vector<std::string>& splits = {"train",
                                                                                                    "val"}) {
  std::vector<std::string> wnids;
  for (int k = 0; k < classes; ++k) wnids.push_back("n1" + std::to_string(1000000 + k));
  uint32_t state = 12345;
  auto random = [&state](int n) {
    state = state * 1664525u + 1013904223u;
    return static_cast<int>((state >> 8) % static_cast<uint32_t>(n));
  };
  for (const std::string& split : splits) {
    for (int k = 0; k < classes; ++k) {
      const std::array<int, 3> colour = class_colour(k);
      for (int j = 0; j < per_class; ++j) {
        const int w = 40 + random(61), h = 30 + random(51), jitter = random(41) - 20;
        const bool cmyk = (k + j) % 7 == 3;
        std::vector<uint8_t> pixels(static_cast<std::size_t>(w) * h * (cmyk ? 4 : 3));
        for (int y = 0; y < h; ++y) {
          for (int x = 0; x < w; ++x) {
            const int stripe = ((x + y * (k % 3)) / 6) % 2 == 0 ? 15 : -15;
            for (int c = 0; c < 3; ++c) {
              const int v = std::clamp(colour[c] + jitter + stripe + random(21) - 10, 0, 255);
              // CMYK as libjpeg-turbo stores it: C·K/255 = R with K = 255, so C = R.
              pixels[(static_cast<std::size_t>(y) * w + x) * (cmyk ? 4 : 3) + c] = static_cast<uint8_t>(v);
            }
            if (cmyk) pixels[(static_cast<std::size_t>(y) * w + x) * 4 + 3] = 255;
          }
        }
        write_file(
            root + "/" + split + "/" + wnids[static_cast<std::size_t>(k)] + "/img_" + std::to_string(j) +
                ".JPEG",
            encode_jpeg(pixels, w, h, cmyk ? TJPF_CMYK : TJPF_RGB, cmyk ? TJSAMP_444 : TJSAMP_420, 90));
      }
    }
  }
  return wnids;
}

}  // namespace petra::data::testing

// JPEG decoding: pixels equal TurboJPEG's own decode at full and DCT-scaled sizes, for RGB,
// grayscale and CMYK files of varied sizes; solid colours decode to their values; bad files throw.
#include "datasets/jpeg.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>

#include "tests/datasets/image_files.hpp"

using namespace petra::data;
using namespace petra::data::testing;

namespace {

const char* kind_name(jpeg_kind kind) {
  return kind == jpeg_kind::rgb ? "rgb" : kind == jpeg_kind::gray ? "gray" : "cmyk";
}

}  // namespace

TEST_CASE("decoded pixels equal TurboJPEG's own decode, full size and DCT-scaled, in every colour space") {
  const std::vector<std::pair<int, int>> sizes = {{1, 1},   {7, 5},    {16, 16},  {33, 17},
                                                  {64, 48}, {100, 75}, {31, 200}, {500, 375}};
  const std::vector<jpeg_scale> scales = {{1, 1}, {1, 2}, {3, 8}, {1, 8}};
  jpeg_decoder decoder;
  rgb_image image;
  int files = 0;
  for (const auto& [width, height] : sizes) {
    for (jpeg_kind kind : {jpeg_kind::rgb, jpeg_kind::gray, jpeg_kind::cmyk}) {
      const std::vector<uint8_t> jpeg = pattern_jpeg(width, height, kind, files);
      ++files;
      const jpeg_header header = decoder.read_header(jpeg.data(), jpeg.size());
      CHECK(header.width == width);
      CHECK(header.height == height);
      CHECK(header.grayscale == (kind == jpeg_kind::gray));
      CHECK(header.cmyk == (kind == jpeg_kind::cmyk));
      for (const jpeg_scale scale : scales) {
        CAPTURE(width);
        CAPTURE(height);
        CAPTURE(kind_name(kind));
        CAPTURE(scale.num);
        CAPTURE(scale.denom);
        decoder.decode(jpeg.data(), jpeg.size(), scale, image);
        CHECK(image.width == (width * scale.num + scale.denom - 1) / scale.denom);
        CHECK(image.height == (height * scale.num + scale.denom - 1) / scale.denom);
        CHECK(image.pixels == reference_rgb(jpeg, image.width, image.height));
      }
    }
  }
  CHECK(files == 24);
}

TEST_CASE("grayscale gives R = G = B, and solid colours decode to their values") {
  jpeg_decoder decoder;
  rgb_image image;
  const int w = 40, h = 24;

  const std::vector<uint8_t> gray(static_cast<std::size_t>(w) * h, 77);
  const std::vector<uint8_t> gray_jpeg = encode_jpeg(gray, w, h, TJPF_GRAY, TJSAMP_GRAY, 95);
  decoder.decode(gray_jpeg.data(), gray_jpeg.size(), {1, 1}, image);
  for (std::size_t p = 0; p < image.pixels.size(); p += 3) {
    CHECK(image.pixels[p] == image.pixels[p + 1]);
    CHECK(image.pixels[p] == image.pixels[p + 2]);
    CHECK(std::abs(image.pixels[p] - 77) <= 1);
  }

  std::vector<uint8_t> rgb;
  for (int p = 0; p < w * h; ++p) rgb.insert(rgb.end(), {200, 100, 50});
  const std::vector<uint8_t> rgb_jpeg = encode_jpeg(rgb, w, h, TJPF_RGB, TJSAMP_444, 100);
  decoder.decode(rgb_jpeg.data(), rgb_jpeg.size(), {1, 1}, image);
  for (std::size_t p = 0; p < image.pixels.size(); p += 3) {
    CHECK(std::abs(image.pixels[p] - 200) <= 2);
    CHECK(std::abs(image.pixels[p + 1] - 100) <= 2);
    CHECK(std::abs(image.pixels[p + 2] - 50) <= 2);
  }

  // CMYK as libjpeg-turbo stores it (Adobe's inverted values): R = C·K/255, G = M·K/255, B = Y·K/255.
  std::vector<uint8_t> cmyk;
  for (int p = 0; p < w * h; ++p) cmyk.insert(cmyk.end(), {200, 100, 50, 220});
  const std::vector<uint8_t> cmyk_jpeg = encode_jpeg(cmyk, w, h, TJPF_CMYK, TJSAMP_444, 100);
  decoder.decode(cmyk_jpeg.data(), cmyk_jpeg.size(), {1, 2}, image);
  CHECK(image.width == w / 2);
  for (std::size_t p = 0; p < image.pixels.size(); p += 3) {
    CHECK(std::abs(image.pixels[p] - 173) <= 2);  // 200·220/255 = 172.5
    CHECK(std::abs(image.pixels[p + 1] - 86) <= 2);
    CHECK(std::abs(image.pixels[p + 2] - 43) <= 2);
  }
}

TEST_CASE("choose_jpeg_scale: the smallest of 1/2, 1/4, 1/8 that keeps the region at least the target size") {
  CHECK(choose_jpeg_scale(224, 224, 224, 224).num == 1);
  CHECK(choose_jpeg_scale(224, 224, 224, 224).denom == 1);
  CHECK(choose_jpeg_scale(100, 100, 224, 224).num == 1);  // never upscales in the decoder
  const jpeg_scale quarter = choose_jpeg_scale(1000, 900, 224, 224);
  CHECK(quarter.num * 4 == quarter.denom);  // 1/4 gives 250×225 ≥ 224
  const jpeg_scale half = choose_jpeg_scale(1000, 800, 224, 224);
  CHECK(half.num * 2 == half.denom);  // 1/4 would give 200 rows; 3/8 is never used (slower than 1/1)
  CHECK(choose_jpeg_scale(440, 440, 224, 224).denom == 1);  // less than twice the target: full size
  CHECK(choose_jpeg_scale(8000, 8000, 224, 224).denom == 8);
  for (double side : {230.0, 300.0, 449.0, 450.0, 700.0, 1800.0, 4000.0}) {
    const jpeg_scale s = choose_jpeg_scale(side, side * 1.3, 224, 224);
    CAPTURE(side);
    CHECK(side * s.num >= 224.0 * s.denom);
    CHECK(s.num == 1);
    CHECK((s.denom == 1 || s.denom == 2 || s.denom == 4 || s.denom == 8));
    if (s.denom < 8) CHECK(side < 224.0 * s.denom * 2);  // the next power of two would be too small
  }
  CHECK(scaled_size(375, {3, 8}) == 141);  // ⌈140.625⌉
}

TEST_CASE("truncated, corrupt and non-JPEG bytes are jpeg_errors with libjpeg-turbo's reason") {
  jpeg_decoder decoder;
  rgb_image image;
  const std::vector<uint8_t> good = pattern_jpeg(120, 90, jpeg_kind::rgb, 3);
  const std::vector<uint8_t> truncated(good.begin(),
                                       good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  CHECK_THROWS_WITH_AS(decoder.decode(truncated.data(), truncated.size(), {1, 1}, image),
                       doctest::Contains("Premature end of JPEG file"), jpeg_error);
  const std::vector<uint8_t> header_only(good.begin(), good.begin() + 20);
  CHECK_THROWS_AS(decoder.decode(header_only.data(), header_only.size(), {1, 1}, image), jpeg_error);
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13};
  CHECK_THROWS_WITH_AS(decoder.read_header(png.data(), png.size()), doctest::Contains("not a JPEG file"),
                       jpeg_error);
  // A corrupt header claiming 60000×60000 pixels is refused before any allocation.
  std::vector<uint8_t> huge = good;
  for (std::size_t i = 2; i + 8 < huge.size(); ++i) {
    if (huge[i] == 0xFF && huge[i + 1] == 0xC0) {  // SOF0: length(2) precision(1) height(2) width(2)
      huge[i + 5] = huge[i + 7] = 0xEA;
      huge[i + 6] = huge[i + 8] = 0x60;
      break;
    }
  }
  CHECK_THROWS_WITH_AS(decoder.decode(huge.data(), huge.size(), {1, 1}, image),
                       doctest::Contains("claims 60000×60000 pixels"), jpeg_error);
  // Within that limit, but far more pixels than the file's bytes can code (fuzzing found a 672-byte
  // file claiming 4096×61699 that decoded, with warnings, into 1.7 GB): refused as corrupt.
  std::vector<uint8_t> dense = huge;
  for (std::size_t i = 2; i + 8 < dense.size(); ++i) {
    if (dense[i] == 0xFF && dense[i + 1] == 0xC0) {
      dense[i + 5] = dense[i + 7] = 0x10;  // 4096×4096
      dense[i + 6] = dense[i + 8] = 0x00;
      break;
    }
  }
  CHECK_THROWS_WITH_AS(decoder.decode(dense.data(), dense.size(), {1, 1}, image),
                       doctest::Contains("pixels per byte can hold: corrupt"), jpeg_error);
  // The decoder stays usable after an error.
  decoder.decode(good.data(), good.size(), {1, 1}, image);
  CHECK(image.pixels == reference_rgb(good, 120, 90));
}

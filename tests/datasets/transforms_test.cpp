// The ImageNet transforms: random-resized-crop windows inside the image and within the scale and
// ratio bounds over 10,000 draws, the eval window's exact geometry, and the resampler's invariants.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "datasets/image_transforms.hpp"

using namespace petra::data;

TEST_CASE("random-resized-crop: 10,000 windows per size lie inside the image, within the bounds") {
  const resized_crop_bounds bounds;  // scale 0.08–1, ratio 3/4–4/3
  for (const auto& [width, height] : std::vector<std::pair<int, int>>{
           {500, 375}, {375, 500}, {100, 100}, {640, 480}, {64, 480}, {1000, 90}}) {
    CAPTURE(width);
    CAPTURE(height);
    const double area = double(width) * height;
    double min_fraction = 1, max_fraction = 0, min_ratio = 10, max_ratio = 0;
    std::set<std::pair<int, int>> corners;
    for (int i = 0; i < 10000; ++i) {
      counter_rng rng(7, rng_stream::augment, 3, i);
      const crop_box b = draw_resized_crop(width, height, bounds, rng);
      // Integer corners, inside the image.
      REQUIRE(b.x == std::floor(b.x));
      REQUIRE(b.y == std::floor(b.y));
      REQUIRE(b.width == std::floor(b.width));
      REQUIRE(b.height == std::floor(b.height));
      REQUIRE(b.x >= 0);
      REQUIRE(b.y >= 0);
      REQUIRE(b.width >= 1);
      REQUIRE(b.height >= 1);
      REQUIRE(b.x + b.width <= width);
      REQUIRE(b.y + b.height <= height);
      // w and h are roundings of √(t·r) and √(t/r): t and r lie in the bounds up to that rounding
      // (the fallback windows of these sizes do too).
      const double w = b.width, h = b.height;
      CHECK((w + 0.5) * (h + 0.5) >= bounds.scale_min * area);
      CHECK((w - 0.5) * (h - 0.5) <= bounds.scale_max * area);
      CHECK((w + 0.5) / (h - 0.5) >= bounds.ratio_min);
      CHECK((w - 0.5) / (h + 0.5) <= bounds.ratio_max);
      // The same key draws the same window.
      counter_rng again(7, rng_stream::augment, 3, i);
      const crop_box c = draw_resized_crop(width, height, bounds, again);
      REQUIRE(c.x == b.x);
      REQUIRE(c.width == b.width);
      min_fraction = std::min(min_fraction, w * h / area);
      max_fraction = std::max(max_fraction, w * h / area);
      min_ratio = std::min(min_ratio, w / h);
      max_ratio = std::max(max_ratio, w / h);
      corners.emplace(int(b.x), int(b.y));
    }
    // The draws cover the allowed range, not one corner of it.
    if (width >= 100 && height >= 100) {
      CHECK(min_fraction < 0.1);
      CHECK(max_fraction > 0.8);
      CHECK(min_ratio < 0.8);
      CHECK(max_ratio > 1.25);
      CHECK(corners.size() > 1000);
    }
  }
}

TEST_CASE("random-resized-crop falls back to the central crop clamped to the ratio bounds") {
  resized_crop_bounds bounds;
  bounds.scale_min = 1.0;  // the whole area at a ratio 3/4–4/3: impossible in a 1000×100 image
  counter_rng rng(1, rng_stream::augment, 0, 0);
  const crop_box wide = draw_resized_crop(1000, 100, bounds, rng);
  CHECK(wide.width == 133);  // round(100 · 4/3)
  CHECK(wide.height == 100);
  CHECK(wide.x == (1000 - 133) / 2);
  CHECK(wide.y == 0);
  const crop_box tall = draw_resized_crop(90, 400, bounds, rng);
  CHECK(tall.width == 90);
  CHECK(tall.height == 120);  // round(90 / (3/4))
  CHECK(tall.y == (400 - 120) / 2);
  const crop_box square = draw_resized_crop(300, 250, bounds, rng);  // ratio 1.2 is allowed: whole image
  CHECK(square.width == 300);
  CHECK(square.height == 250);
  bounds.scale_min = 0;
  CHECK_THROWS_AS(check_resized_crop_bounds(bounds), std::invalid_argument);
}

TEST_CASE("center_crop_box: resize the shorter side to 256, crop 224 in the middle, in source pixels") {
  // 500×375 → 341×256 (⌊256·500/375⌋); left = round-half-even(58.5) = 58, top = 16.
  const crop_box landscape = center_crop_box(500, 375, 256, 224);
  CHECK(landscape.x == doctest::Approx(58.0 * 500 / 341));
  CHECK(landscape.y == doctest::Approx(16.0 * 375 / 256));
  CHECK(landscape.width == doctest::Approx(224.0 * 500 / 341));
  CHECK(landscape.height == doctest::Approx(224.0 * 375 / 256));
  const crop_box portrait = center_crop_box(375, 500, 256, 224);
  CHECK(portrait.x == doctest::Approx(landscape.y));
  CHECK(portrait.width == doctest::Approx(landscape.height));
  const crop_box exact = center_crop_box(256, 256, 256, 224);
  CHECK(exact.x == 16);
  CHECK(exact.y == 16);
  CHECK(exact.width == 224);
  CHECK(exact.height == 224);
  const crop_box small = center_crop_box(50, 40, 73, 64);  // upscaled: still inside the image
  CHECK(small.x >= 0);
  CHECK(small.x + small.width <= 50 + 1e-9);
  CHECK(small.y + small.height <= 40 + 1e-9);
}

namespace {

rgb_image image_of(int width, int height, uint8_t (*value)(int x, int y, int c)) {
  rgb_image image{width, height, std::vector<uint8_t>(static_cast<std::size_t>(width) * height * 3)};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)
        image.pixels[(static_cast<std::size_t>(y) * width + x) * 3 + c] = value(x, y, c);
  return image;
}

}  // namespace

TEST_CASE("resample_to_chw: solid stays solid, an unscaled window copies, flip mirrors exactly") {
  const channel_affine norm = normalisation({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
  const rgb_image solid = image_of(97, 61, [](int, int, int c) { return uint8_t(60 + 70 * c); });
  std::vector<float> out(3 * 32 * 40);
  resample_to_chw(solid, {3.5, 2.25, 80.0, 50.5}, 40, 32, false, norm, out.data());
  for (int c = 0; c < 3; ++c) {
    const float expected = ((60 + 70 * c) / 255.0f - std::vector<float>{0.485f, 0.456f, 0.406f}[c]) /
                           std::vector<float>{0.229f, 0.224f, 0.225f}[c];
    for (int k = 0; k < 32 * 40; ++k)
      REQUIRE(out[static_cast<std::size_t>(c * 32 * 40 + k)] == doctest::Approx(expected).epsilon(1e-5));
  }

  const rgb_image pattern =
      image_of(50, 30, [](int x, int y, int c) { return uint8_t((x * 5 + y * 3 + c * 80) % 256); });
  const channel_affine plain = normalisation({}, {});
  std::vector<float> copy(3 * 20 * 24), mirrored(3 * 20 * 24);
  resample_to_chw(pattern, {10, 6, 24, 20}, 24, 20, false, plain, copy.data());
  resample_to_chw(pattern, {10, 6, 24, 20}, 24, 20, true, plain, mirrored.data());
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 20; ++y) {
      for (int x = 0; x < 24; ++x) {
        const float source = pattern.pixels[(static_cast<std::size_t>(y + 6) * 50 + x + 10) * 3 + c] / 255.0f;
        REQUIRE(copy[static_cast<std::size_t>((c * 20 + y) * 24 + x)] ==
                doctest::Approx(source).epsilon(1e-6));
        REQUIRE(mirrored[static_cast<std::size_t>((c * 20 + y) * 24 + 23 - x)] ==
                copy[static_cast<std::size_t>((c * 20 + y) * 24 + x)]);
      }
    }
  }
}

TEST_CASE("resample_to_chw: shrinking reproduces a linear ramp (a symmetric, normalised filter)") {
  const rgb_image ramp = image_of(256, 8, [](int x, int, int) { return uint8_t(x); });
  std::vector<float> out(3 * 2 * 64);
  resample_to_chw(ramp, {0, 0, 256, 8}, 64, 2, false, normalisation({}, {}), out.data());
  for (int x = 2; x < 62; ++x) {  // away from the edges, where taps are clipped
    CAPTURE(x);
    CHECK(out[static_cast<std::size_t>(x)] * 255.0f == doctest::Approx(4.0 * x + 1.5).epsilon(1e-4));
  }
  std::vector<float> small(3);
  CHECK_THROWS_AS(resample_to_chw(ramp, {250, 0, 10, 8}, 1, 1, false, normalisation({}, {}), small.data()),
                  std::invalid_argument);
}

// make_batch: exact normalisation, crops that are shifted windows over zero padding, exact mirrors,
// and batches that are a pure function of (seed, epoch, position) so that any batch can be rebuilt.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

#include "datasets/datasets.hpp"

using namespace petra::data;

namespace {

// `count` images of channels×height×width; pixel k of image i is 1 + (i + k) mod 250 (never 0,
// and distinct within an image when C·H·W ≤ 250, so a crop's offset can be recognised).
dataset synthetic(int64_t count, int channels, int height, int width) {
  dataset d;
  d.name = "synthetic";
  d.count = count;
  d.channels = channels;
  d.height = height;
  d.width = width;
  d.num_classes = 10;
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t k = 0; k < d.image_size(); ++k) d.pixels.push_back(static_cast<uint8_t>(1 + (i + k) % 250));
    d.labels.push_back(static_cast<int32_t>(i % 10));
  }
  return d;
}

float normalise(int value, float mean, float std) { return (value / 255.0f - mean) / std; }

// The reference crop: out[c][y][x] = padded[c][y + dy][x' + dx], x' = W−1−x when flipped.
std::vector<float> reference_crop(const dataset& d, int64_t index, const augment_options& opt, int dy, int dx,
                                  bool flip) {
  const int p = opt.crop_padding, h = d.height, w = d.width;
  std::vector<float> out;
  for (int c = 0; c < d.channels; ++c) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const int sy = y + dy - p, sx = (flip ? w - 1 - x : x) + dx - p;
        const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
        const int value =
            inside ? d.pixels[static_cast<std::size_t>(index * d.image_size() + (c * h + sy) * w + sx)] : 0;
        out.push_back(
            normalise(value, opt.mean[static_cast<std::size_t>(c)], opt.std[static_cast<std::size_t>(c)]));
      }
    }
  }
  return out;
}

struct batch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

batch make(const dataset& d, const std::vector<int64_t>& indices, const augment_options& opt, bool train,
           uint64_t seed, int epoch, int64_t first_position) {
  batch b{std::vector<float>(indices.size() * static_cast<std::size_t>(d.image_size())),
          std::vector<int32_t>(indices.size())};
  make_batch(d, indices.data(), static_cast<int64_t>(indices.size()), opt, train, seed, epoch, first_position,
             b.images.data(), b.labels.data());
  return b;
}

// Which (dy, dx, flip) made image i of `b`, as dy·1000 + dx·10 + flip; −1 when none matches exactly.
int find_transform(const dataset& d, const batch& b, std::size_t i, int64_t index,
                   const augment_options& opt) {
  const auto size = static_cast<std::size_t>(d.image_size());
  const std::vector<float> got(b.images.begin() + static_cast<std::ptrdiff_t>(i * size),
                               b.images.begin() + static_cast<std::ptrdiff_t>((i + 1) * size));
  for (int dy = 0; dy <= 2 * opt.crop_padding; ++dy) {
    for (int dx = 0; dx <= 2 * opt.crop_padding; ++dx) {
      for (bool flip : {false, true}) {
        if (got == reference_crop(d, index, opt, dy, dx, flip)) return dy * 1000 + dx * 10 + (flip ? 1 : 0);
      }
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("eval batches are normalised per channel and carry the labels") {
  const dataset d = synthetic(5, 3, 4, 4);
  augment_options opt{{0.1f, 0.5f, 0.9f}, {0.2f, 0.25f, 2.0f}, 4, true};  // eval ignores crop and flip
  const batch b = make(d, {4, 0, 2}, opt, false, 1, 0, 0);
  CHECK(b.labels == std::vector<int32_t>{4, 0, 2});
  const std::vector<int64_t> indices{4, 0, 2};
  for (std::size_t i = 0; i < 3; ++i) {
    for (int c = 0; c < 3; ++c) {
      for (int k = 0; k < 16; ++k) {
        const int value = d.pixels[static_cast<std::size_t>(indices[i] * 48 + c * 16 + k)];
        CHECK(b.images[i * 48 + static_cast<std::size_t>(c * 16 + k)] ==
              doctest::Approx(normalise(value, opt.mean[static_cast<std::size_t>(c)],
                                        opt.std[static_cast<std::size_t>(c)]))
                  .epsilon(1e-6));
      }
    }
  }
  // No mean/std at all is x/255.
  const batch plain = make(d, {1}, augment_options{}, false, 0, 0, 0);
  CHECK(plain.images[0] == doctest::Approx(d.pixels[48] / 255.0f));
}

TEST_CASE("train with neither crop nor flip equals eval") {
  const dataset d = synthetic(4, 1, 5, 5);
  const augment_options opt{{0.3f}, {0.4f}, 0, false};
  CHECK(make(d, {0, 1, 2, 3}, opt, true, 9, 2, 17).images ==
        make(d, {0, 1, 2, 3}, opt, false, 9, 2, 17).images);
}

TEST_CASE("flip only: every image is the original or its exact mirror, and both occur") {
  const dataset d = synthetic(1, 1, 6, 7);
  const augment_options opt{{0.5f}, {0.5f}, 0, true};
  const batch b = make(d, std::vector<int64_t>(64, 0), opt, true, 3, 0, 0);
  std::set<int> seen;
  for (std::size_t i = 0; i < 64; ++i) {
    const int transform = find_transform(d, b, i, 0, opt);
    REQUIRE(transform >= 0);
    seen.insert(transform);
  }
  CHECK(seen == std::set<int>{0, 1});
}

TEST_CASE("crop with padding p: every image is a shifted window with normalised zeros outside") {
  const dataset d = synthetic(1, 2, 6, 7);
  const augment_options opt{{0.2f, 0.6f}, {0.3f, 0.7f}, 2, false};
  const batch b = make(d, std::vector<int64_t>(400, 0), opt, true, 11, 1, 0);
  std::set<int> offsets;
  for (std::size_t i = 0; i < 400; ++i) {
    const int transform = find_transform(d, b, i, 0, opt);
    REQUIRE(transform >= 0);
    CHECK(transform % 10 == 0);  // never flipped
    offsets.insert(transform);
  }
  CHECK(offsets.size() == 25);                   // all (2p+1)² offsets are drawn
  CHECK(offsets.count(2 * 1000 + 2 * 10) == 1);  // including the centred, unshifted one
}

TEST_CASE("crop and flip together: each image matches one (dy, dx, flip)") {
  const dataset d = synthetic(3, 1, 5, 5);
  const augment_options opt{{0.0f}, {1.0f}, 1, true};
  const std::vector<int64_t> indices{2, 0, 1, 2, 0, 1, 1, 1};
  const batch b = make(d, indices, opt, true, 5, 4, 100);
  for (std::size_t i = 0; i < indices.size(); ++i) CHECK(find_transform(d, b, i, indices[i], opt) >= 0);
}

TEST_CASE("make_batch is a pure function of (seed, epoch, position): any batch can be rebuilt") {
  const dataset d = synthetic(100, 1, 28, 28);
  const augment_options opt{{0.286f}, {0.353f}, 2, true};
  const std::vector<int64_t> order = epoch_order(d.count, 42, 3);
  const std::vector<int64_t> first_64(order.begin(), order.begin() + 64);

  const batch whole = make(d, first_64, opt, true, 42, 3, 0);
  const batch again = make(d, first_64, opt, true, 42, 3, 0);
  REQUIRE(whole.images.size() == again.images.size());
  CHECK(std::memcmp(whole.images.data(), again.images.data(), whole.images.size() * sizeof(float)) == 0);

  // The same samples as two half batches (as after a resume, or in another process) are the same bytes.
  const batch head = make(d, {first_64.begin(), first_64.begin() + 32}, opt, true, 42, 3, 0);
  const batch tail = make(d, {first_64.begin() + 32, first_64.end()}, opt, true, 42, 3, 32);
  std::vector<float> joined = head.images;
  joined.insert(joined.end(), tail.images.begin(), tail.images.end());
  CHECK(std::memcmp(joined.data(), whole.images.data(), joined.size() * sizeof(float)) == 0);

  // Another position, epoch or seed draws other crops.
  CHECK(make(d, first_64, opt, true, 42, 3, 64).images != whole.images);
  CHECK(make(d, first_64, opt, true, 42, 4, 0).images != whole.images);
  CHECK(make(d, first_64, opt, true, 43, 3, 0).images != whole.images);
  const batch same_image = make(d, std::vector<int64_t>(64, 7), opt, true, 42, 3, 0);
  const auto size = static_cast<std::ptrdiff_t>(d.image_size());
  std::set<std::vector<float>> distinct;
  for (std::ptrdiff_t i = 0; i < 64; ++i) {
    distinct.emplace(same_image.images.begin() + i * size, same_image.images.begin() + (i + 1) * size);
  }
  CHECK(distinct.size() > 30);  // 50 possible (dy, dx, flip): 64 draws hit many of them
}

TEST_CASE("bad options and indices are rejected with the value and the fix") {
  const dataset d = synthetic(3, 3, 4, 4);
  std::vector<float> images(48);
  std::vector<int32_t> labels(1);
  const int64_t index = 0;
  auto run = [&](const augment_options& opt, int64_t i = 0) {
    const int64_t at = i;
    make_batch(d, &at, 1, opt, true, 0, 0, 0, images.data(), labels.data());
  };
  CHECK_THROWS_WITH_AS(run({{0.5f}, {0.5f}, 0, false}), doctest::Contains("expected one per channel (3)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(run({{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f}, 0, false}),
                       doctest::Contains("mean has 3 entries and std 2"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(run({{0.5f, 0.5f, 0.5f}, {0.5f, 0.0f, 0.5f}, 0, false}),
                       doctest::Contains("std[1] = 0"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(run({{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, -1.0f}, 0, false}),
                       doctest::Contains("std[2] = -1"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(run({{0.5f, NAN, 0.5f}, {0.5f, 0.5f, 0.5f}, 0, false}), doctest::Contains("mean[1]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(run({{}, {}, -1, false}), doctest::Contains("crop_padding = -1"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(run({}, 3), doctest::Contains("indices[0] = 3 is outside synthetic [0, 3)"),
                       std::out_of_range);
  CHECK_NOTHROW(run({}, index));
}

TEST_CASE("make_batch for 64 Fashion-MNIST-sized images takes well under a millisecond") {
  const dataset d = synthetic(1000, 1, 28, 28);
  const augment_options opt{{0.286f}, {0.353f}, 2, true};
  const std::vector<int64_t> order = epoch_order(d.count, 1, 0);
  std::vector<float> images(64 * 784);
  std::vector<int32_t> labels(64);
  constexpr int rounds = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) {
    make_batch(d, order.data() + (r * 64) % 900, 64, opt, true, 1, 0, r * 64, images.data(), labels.data());
  }
  const double micros =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / rounds;
  MESSAGE("make_batch, 64 images 1×28×28 with crop and flip: " << micros << " µs per batch");
#ifdef NDEBUG
  CHECK(micros < 1000.0);
#endif
}

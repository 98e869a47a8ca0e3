// ImageNet folders: the listing and class index, exact output shapes, pixels equal to a reference
// decode, bad images skipped deterministically (or failing with the path), and layout errors.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>

#include "datasets/datasets.hpp"
#include "tests/datasets/image_files.hpp"

using namespace petra::data;
using namespace petra::data::testing;

namespace {

struct filled {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

// fill_batch into a buffer with NaN guards after the expected end, which must stay untouched.
filled fill(const image_source& source, const std::vector<int64_t>& indices, bool train, uint64_t seed = 1,
            int epoch = 0, int64_t first = 0) {
  const std::size_t size = indices.size() * static_cast<std::size_t>(source.shape().size());
  filled f{std::vector<float>(size + 64, std::numeric_limits<float>::quiet_NaN()),
           std::vector<int32_t>(indices.size(), -1)};
  source.fill_batch(indices.data(), static_cast<int64_t>(indices.size()), train, seed, epoch, first,
                    f.images.data(), f.labels.data());
  for (std::size_t k = size; k < f.images.size(); ++k) REQUIRE(std::isnan(f.images[k]));
  f.images.resize(size);
  return f;
}

bool all_finite(const std::vector<float>& values) {
  for (float v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

imagenet_transform small_transform(int crop = 64, int resize = 73) {
  imagenet_transform t;
  t.crop_size = crop;
  t.resize_size = resize;
  return t;
}

}  // namespace

TEST_CASE("an ImageNet tree lists classes sorted by folder, files sorted by name, and writes classes.txt") {
  temp_dir dir;
  const std::vector<std::string> wnids = write_jpeg_tree(dir.str(), 3, 4);
  write_file(dir.file("train/README.txt"), {'x'});              // stray files are not classes
  write_file(dir.file("train/" + wnids[1] + "/notes"), {'x'});  // nor images
  const imagenet_source train(dir.str(), true, small_transform());
  CHECK(train.name() == "imagenet/train");
  CHECK(train.count() == 12);
  CHECK(train.num_classes() == 3);
  CHECK(train.class_names() == wnids);
  CHECK(train.shape().channels == 3);
  CHECK(train.shape().height == 64);
  CHECK(train.shape().width == 64);
  for (int64_t i = 0; i < 12; ++i) {
    CHECK(train.label(i) == i / 4);
    CHECK(train.path(i) == dir.file("train/" + wnids[static_cast<std::size_t>(i / 4)] + "/img_" +
                                    std::to_string(i % 4) + ".JPEG"));
  }
  const imagenet_source val(dir.str(), false, small_transform());
  CHECK(val.name() == "imagenet/val");
  CHECK(val.count() == 12);
  CHECK(val.class_names() == wnids);

  const std::string index = write_class_index(train.class_names(), dir.str());
  CHECK(index == dir.file("classes.txt"));
  std::ifstream in(index);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  CHECK(lines == wnids);
  CHECK_FALSE(std::filesystem::exists(dir.file("classes.txt.tmp")));
  CHECK_THROWS_WITH_AS(write_class_index(wnids, dir.file("absent")), contains(dir.file("absent")),
                       std::runtime_error);

  // open_dataset opens the same thing by name.
  dataset_spec spec;
  spec.kind = dataset_kind::imagenet;
  spec.path = dir.str();
  spec.mean = {0.485f, 0.456f, 0.406f};
  spec.std = {0.229f, 0.224f, 0.225f};
  spec.crop_size = 64;
  spec.resize_size = 73;
  const auto opened = open_dataset(spec, false);
  CHECK(opened->name() == "imagenet/val");
  CHECK(opened->count() == 12);
  spec.limit = 5;  // spread over the split: every class keeps samples
  const auto limited = open_dataset(spec, true);
  REQUIRE(limited->count() == 5);
  std::set<int32_t> classes;
  for (int64_t i = 0; i < 5; ++i) classes.insert(limited->label(i));
  CHECK(classes.size() == 3);
}

TEST_CASE("output shapes are exact for every input size, in train and eval, and labels come along") {
  temp_dir dir;
  write_jpeg_tree(dir.str(), 3, 9);  // nine sizes and colour spaces per class
  for (const auto& [crop, resize] : std::vector<std::pair<int, int>>{{64, 73}, {224, 256}, {32, 32}}) {
    CAPTURE(crop);
    const imagenet_source source(dir.str(), true, small_transform(crop, resize));
    std::vector<int64_t> all(27);
    std::iota(all.begin(), all.end(), int64_t{0});
    for (bool train : {true, false}) {
      const filled f = fill(source, all, train, 5, 2, 100);
      CHECK(f.images.size() == 27u * 3 * crop * crop);
      CHECK(all_finite(f.images));
      for (int64_t i = 0; i < 27; ++i) CHECK(f.labels[static_cast<std::size_t>(i)] == i / 9);
    }
  }
}

TEST_CASE("eval of a 256×256 JPEG is exactly its decoded central 224×224, normalised") {
  temp_dir dir;
  const std::vector<uint8_t> jpeg = pattern_jpeg(256, 256, jpeg_kind::rgb, 4);
  write_file(dir.file("train/n01/a.JPEG"), jpeg);
  write_file(dir.file("val/n01/a.JPEG"), jpeg);
  const imagenet_source val(dir.str(), false, imagenet_transform{});
  const filled f = fill(val, {0}, false);
  const std::vector<uint8_t> reference = reference_rgb(jpeg, 256, 256);
  const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 224; ++y) {
      for (int x = 0; x < 224; ++x) {
        const float v = reference[(static_cast<std::size_t>(y + 16) * 256 + x + 16) * 3 + c] / 255.0f;
        REQUIRE(f.images[static_cast<std::size_t>((c * 224 + y) * 224 + x)] ==
                doctest::Approx((v - mean[c]) / std[c]).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("DCT-scaled decoding of a large image stays close to decoding it at full size") {
  // A smooth photo-like image (no sharp edges, which two different low-pass filters would render
  // differently), 1203×901 so that the scaled sizes round up.
  const int w = 1203, h = 901;
  std::vector<uint8_t> pixels(static_cast<std::size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        pixels[(static_cast<std::size_t>(y) * w + x) * 3 + c] =
            static_cast<uint8_t>(128 + 60 * std::sin(x / 40.0 + c) + 50 * std::cos(y / 55.0 - c));
  const std::vector<uint8_t> jpeg = encode_jpeg(pixels, w, h, TJPF_RGB, TJSAMP_420, 95);
  temp_dir dir;
  write_file(dir.file("train/n01/big.JPEG"), jpeg);
  write_file(dir.file("val/n01/big.JPEG"), jpeg);
  const imagenet_transform t = small_transform(64, 73);
  const imagenet_source val(dir.str(), false, t);
  const filled f = fill(val, {0}, false);  // decodes at 1/8: the 789-pixel window needs only 64
  rgb_image full{w, h, reference_rgb(jpeg, w, h)};
  std::vector<float> expected(3 * 64 * 64);
  resample_to_chw(full, center_crop_box(w, h, 73, 64), 64, 64, false, normalisation(t.mean, t.std),
                  expected.data());
  double difference = 0, largest = 0;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const double d = std::abs(f.images[k] - expected[k]) * t.std[k / (64 * 64)] * 255;  // in pixel units
    difference += d;
    largest = std::max(largest, d);
  }
  MESSAGE("DCT-scaled vs full-size decode: mean difference " << difference / double(expected.size())
                                                             << ", largest " << largest << " (pixel units)");
  CHECK(difference / double(expected.size()) < 0.8);
  CHECK(largest < 3.0);
}

TEST_CASE("train crops depend only on (seed, epoch, position)") {
  temp_dir dir;
  write_jpeg_tree(dir.str(), 2, 5);
  const imagenet_source source(dir.str(), true, small_transform());
  const std::vector<int64_t> indices = {3, 7, 1, 9, 0};
  const filled a = fill(source, indices, true, 11, 4, 20);
  CHECK(fill(source, indices, true, 11, 4, 20).images == a.images);
  const filled tail = fill(source, {9, 0}, true, 11, 4, 23);  // positions 23, 24 alone: the same bytes
  CHECK(std::equal(tail.images.begin(), tail.images.end(),
                   a.images.end() - static_cast<std::ptrdiff_t>(tail.images.size())));
  CHECK(fill(source, indices, true, 11, 5, 20).images != a.images);
  CHECK(fill(source, indices, true, 12, 4, 20).images != a.images);
  CHECK(fill(source, indices, true, 11, 4, 21).images != a.images);
  CHECK(fill(source, indices, false, 11, 4, 20).images == fill(source, indices, false, 99, 9, 0).images);
}

TEST_CASE("a corrupt or truncated JPEG is skipped for the next good image and reported once, fail names it") {
  temp_dir dir;
  const std::vector<std::string> wnids = write_jpeg_tree(dir.str(), 2, 3);
  const std::string truncated = dir.file("train/" + wnids[0] + "/img_1.JPEG");
  const std::vector<uint8_t> good = pattern_jpeg(120, 90, jpeg_kind::rgb, 1);
  write_file(truncated,
             std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 3)));
  const std::string not_jpeg = dir.file("train/" + wnids[0] + "/img_2.JPEG");  // a PNG under a .JPEG name
  write_file(not_jpeg, {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R'});

  const imagenet_source skip(dir.str(), true, small_transform(), bad_image_policy::skip);
  // Indices 1 and 2 are bad: both become index 3 (the first image of class 1), with its label,
  // augmented as their own positions dictate.
  const filled replaced = fill(skip, {1, 2, 0}, true, 3, 1, 40);
  CHECK(replaced.labels == std::vector<int32_t>{1, 1, 0});
  CHECK(all_finite(replaced.images));
  const filled direct = fill(skip, {3, 3}, true, 3, 1, 40);
  CHECK(std::equal(direct.images.begin(), direct.images.end(), replaced.images.begin()));
  CHECK(skip.bad_image_count() == 2);
  const std::vector<bad_image> bad = skip.bad_images();
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].index == 1);
  CHECK(bad[0].path == truncated);
  CHECK(bad[0].reason.find("Premature end") != std::string::npos);
  CHECK(bad[1].path == not_jpeg);
  CHECK(bad[1].reason.find("not a JPEG") != std::string::npos);
  fill(skip, {2, 1, 2}, false);  // met again: still reported once each
  CHECK(skip.bad_image_count() == 2);
  CHECK(skip.bad_images(1).size() == 1);

  const imagenet_source fail(dir.str(), true, small_transform(), bad_image_policy::fail);
  CHECK_NOTHROW(fill(fail, {0, 3}, true));
  CHECK_THROWS_WITH_AS(fill(fail, {0, 1}, true), contains(truncated + ": bad image: "), dataset_error);
  CHECK_THROWS_WITH_AS(fill(fail, {2}, false), contains(not_jpeg), dataset_error);
  CHECK_THROWS_WITH_AS(fill(fail, {2}, false), contains("on_bad_image: skip"), dataset_error);
  CHECK(fail.bad_image_count() == 0);
}

TEST_CASE("the learnable tree for end-to-end tests: each image's mean colour names its class") {
  temp_dir dir;
  write_learnable_jpeg_tree(dir.str(), 10, 6);
  imagenet_transform plain = small_transform(32, 36);
  plain.mean = {0, 0, 0};
  plain.std = {1, 1, 1};
  const imagenet_source val(dir.str(), false, plain);
  REQUIRE(val.count() == 60);
  std::vector<int64_t> all(60);
  std::iota(all.begin(), all.end(), int64_t{0});
  const filled f = fill(val, all, false);
  for (int64_t i = 0; i < 60; ++i) {
    double mean[3] = {0, 0, 0};
    for (int c = 0; c < 3; ++c) {
      for (int k = 0; k < 32 * 32; ++k)
        mean[c] += f.images[static_cast<std::size_t>((i * 3 + c) * 1024 + k)] * 255 / 1024;
    }
    int nearest = -1;
    double best = 1e18;
    for (int k = 0; k < 10; ++k) {
      double d = 0;
      for (int c = 0; c < 3; ++c) d += (mean[c] - class_colour(k)[c]) * (mean[c] - class_colour(k)[c]);
      if (d < best) best = d, nearest = k;
    }
    CHECK(nearest == f.labels[static_cast<std::size_t>(i)]);
  }
}

TEST_CASE("layout errors name the path: missing root, split, class folder, extra class, empty folder") {
  temp_dir dir;
  CHECK_THROWS_WITH_AS(imagenet_source(dir.file("nowhere"), true, small_transform()),
                       contains(dir.file("nowhere") + "' does not exist"), dataset_error);
  std::filesystem::create_directories(dir.file("train"));
  CHECK_THROWS_WITH_AS(imagenet_source(dir.str(), true, small_transform()),
                       contains(dir.file("train") + ": empty split"), dataset_error);
  const std::vector<std::string> wnids = write_jpeg_tree(dir.str(), 3, 2, {"train"});
  CHECK_THROWS_WITH_AS(imagenet_source(dir.str(), false, small_transform()),
                       contains(dir.file("val") + ": split directory not found"), dataset_error);
  write_jpeg_tree(dir.str(), 3, 2, {"val"});
  std::filesystem::remove_all(dir.file("val/" + wnids[1]));
  CHECK_THROWS_WITH_AS(imagenet_source(dir.str(), false, small_transform()),
                       contains(dir.file("val/" + wnids[1]) + ": class folder missing"), dataset_error);
  CHECK_NOTHROW(imagenet_source(dir.str(), true, small_transform()));  // train itself is fine
  write_jpeg_tree(dir.str(), 3, 2, {"val"});
  write_file(dir.file("val/n09999999/x.JPEG"), pattern_jpeg(20, 20, jpeg_kind::rgb, 0));
  CHECK_THROWS_WITH_AS(imagenet_source(dir.str(), false, small_transform()),
                       contains(dir.file("val/n09999999") + ": not a class of"), dataset_error);
  std::filesystem::remove_all(dir.file("val/n09999999"));
  std::filesystem::remove(dir.file("train/" + wnids[2] + "/img_0.JPEG"));
  std::filesystem::remove(dir.file("train/" + wnids[2] + "/img_1.JPEG"));
  CHECK_THROWS_WITH_AS(imagenet_source(dir.str(), true, small_transform()),
                       contains(dir.file("train/" + wnids[2]) + ": class folder holds no images"),
                       dataset_error);
  imagenet_transform bad = small_transform(64, 32);
  CHECK_THROWS_WITH_AS(imagenet_source(dir.str(), true, bad),
                       doctest::Contains("resize_size = 32 is below crop_size = 64"), std::invalid_argument);
}

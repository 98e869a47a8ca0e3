// The real Fashion-MNIST files (Debian package dataset-fashion-mnist), and channel statistics.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "datasets/datasets.hpp"
#include "tests/skip.hpp"

using namespace petra::data;

namespace {

const char* const fashion_dir = "/usr/share/datasets/fashion-mnist";

}  // namespace

TEST_CASE("Fashion-MNIST loads: 60000/10000 images of 28×28, balanced labels, known statistics") {
  if (!std::filesystem::is_directory(fashion_dir))
    PETRA_SKIP(std::string(fashion_dir) + " is missing; apt install dataset-fashion-mnist to run this case");
  const auto start = std::chrono::steady_clock::now();
  const dataset train = load_dataset("fashion-mnist", fashion_dir, true);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("loading the 60000-image gzipped Fashion-MNIST train split took " << seconds << " s");
#ifdef NDEBUG
#endif
  const dataset test = load_dataset("fashion-mnist", fashion_dir, false);
  for (const dataset* d : {&train, &test}) {
    CAPTURE(d->name);
    CHECK(d->channels == 1);
    CHECK(d->height == 28);
    CHECK(d->width == 28);
    CHECK(d->num_classes == 10);
    CHECK(d->pixels.size() == static_cast<std::size_t>(d->count) * 784);
    std::vector<int64_t> per_class(10, 0);
    for (int32_t label : d->labels) {
      REQUIRE((label >= 0 && label < 10));
      ++per_class[static_cast<std::size_t>(label)];
    }
    for (int64_t n : per_class) CHECK(n == d->count / 10);  // Fashion-MNIST is exactly balanced
  }
  CHECK(train.count == 60000);
  CHECK(test.count == 10000);
  const auto [mean, deviation] = channel_stats(train);
  REQUIRE(mean.size() == 1);
  CHECK(mean[0] == doctest::Approx(0.2860).epsilon(0.0005 / 0.286));
  CHECK(deviation[0] == doctest::Approx(0.3530).epsilon(0.0005 / 0.353));
}

TEST_CASE("channel_stats: per-channel mean and population std of x/255") {
  dataset d;
  d.count = 2;
  d.channels = 2;
  d.height = 1;
  d.width = 2;
  // Channel 0 sees {0, 255, 255, 255}, channel 1 sees {51, 51, 102, 102}.
  d.pixels = {0, 255, 51, 51, 255, 255, 102, 102};
  d.labels = {0, 1};
  const auto [mean, deviation] = channel_stats(d);
  REQUIRE(mean.size() == 2);
  CHECK(mean[0] == doctest::Approx(0.75));
  CHECK(deviation[0] == doctest::Approx(std::sqrt(0.75 * 0.25)));
  CHECK(mean[1] == doctest::Approx(0.3));
  CHECK(deviation[1] == doctest::Approx(0.1));
}

TEST_CASE("keep_first trims images and labels together") {
  dataset d;
  d.count = 3;
  d.channels = 1;
  d.height = d.width = 1;
  d.pixels = {10, 20, 30};
  d.labels = {1, 2, 3};
  keep_first(d, 0);
  CHECK(d.count == 3);
  keep_first(d, 2);
  CHECK(d.count == 2);
  CHECK(d.pixels == std::vector<uint8_t>{10, 20});
  CHECK(d.labels == std::vector<int32_t>{1, 2});
}

// Loading by kind, trimming, and per-channel statistics.
#include "datasets/dataset.hpp"

#include <array>
#include <cmath>
#include <utility>

#include "datasets/cifar10.hpp"
#include "datasets/idx.hpp"
#include "datasets/imagenet32.hpp"

namespace petra::data {

namespace {

constexpr std::array<std::pair<const char*, dataset_kind>, 5> kind_names = {
    {{"fashion-mnist", dataset_kind::fashion_mnist},
     {"mnist", dataset_kind::mnist},
     {"cifar10", dataset_kind::cifar10},
     {"imagenet32", dataset_kind::imagenet32},
     {"imagenet", dataset_kind::imagenet}}};

}  // namespace

const char* name_of(dataset_kind kind) {
  for (const auto& [name, k] : kind_names)
    if (k == kind) return name;
  return "?";
}

dataset_kind parse_dataset_kind(const std::string& name) {
  for (const auto& [known, kind] : kind_names)
    if (name == known) return kind;
  throw std::invalid_argument("unknown dataset kind '" + name +
                              "': expected fashion-mnist, mnist, cifar10, imagenet32 or imagenet");
}

dataset load_dataset(dataset_kind kind, const std::string& dir, bool train) {
  switch (kind) {
    case dataset_kind::fashion_mnist:
    case dataset_kind::mnist:
      return load_mnist_like(dir, train, kind);
    case dataset_kind::cifar10:
      return load_cifar10(dir, train);
    case dataset_kind::imagenet32:
      return load_imagenet32(dir, train);
    case dataset_kind::imagenet:
      break;
  }
  throw std::invalid_argument(
      "dataset kind 'imagenet' is read from its files on demand and has no in-memory form: open it with "
      "open_dataset (datasets/open_dataset.hpp)");
}

dataset load_dataset(const std::string& kind, const std::string& dir, bool train) {
  return load_dataset(parse_dataset_kind(kind), dir, train);
}

void keep_first(dataset& d, int64_t n) {
  if (n <= 0 || n >= d.count) return;
  d.count = n;
  d.pixels.resize(static_cast<std::size_t>(n * d.image_size()));
  d.labels.resize(static_cast<std::size_t>(n));
  d.pixels.shrink_to_fit();
  d.labels.shrink_to_fit();
}

std::pair<std::vector<float>, std::vector<float>> channel_stats(const dataset& d) {
  // A histogram per channel makes the sums exact integers, whatever the dataset's size.
  std::vector<std::array<uint64_t, 256>> histograms(static_cast<std::size_t>(d.channels));
  for (auto& h : histograms) h.fill(0);
  const int64_t plane = int64_t{d.height} * d.width;
  for (int64_t i = 0; i < d.count; ++i) {
    for (int c = 0; c < d.channels; ++c) {
      const uint8_t* p = d.pixels.data() + i * d.image_size() + c * plane;
      auto& h = histograms[static_cast<std::size_t>(c)];
      for (int64_t k = 0; k < plane; ++k) ++h[p[k]];
    }
  }
  std::vector<float> mean(histograms.size()), std(histograms.size());
  for (std::size_t c = 0; c < histograms.size(); ++c) {
    double n = 0, sum = 0;
    for (int v = 0; v < 256; ++v) {
      n += double(histograms[c][v]);
      sum += double(histograms[c][v]) * v;
    }
    const double mu = n > 0 ? sum / n : 0.0;
    double squares = 0;
    for (int v = 0; v < 256; ++v) squares += double(histograms[c][v]) * (v - mu) * (v - mu);
    mean[c] = static_cast<float>(mu / 255.0);
    std[c] = static_cast<float>(n > 0 ? std::sqrt(squares / n) / 255.0 : 0.0);
  }
  return {mean, std};
}

}  // namespace petra::data

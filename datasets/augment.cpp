// Batch assembly: a per-channel 256-entry lookup table does the normalisation, and each sample's
// crop offset and flip come from a generator keyed by its position in the epoch.
#include "datasets/augment.hpp"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "datasets/counter_rng.hpp"

namespace petra::data {
namespace {

using normalise_table = std::array<float, 256>;

std::vector<normalise_table> normalise_tables(const augment_options& opt, int channels) {
  std::vector<normalise_table> tables(static_cast<std::size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    const float mean = opt.mean.empty() ? 0.0f : opt.mean[static_cast<std::size_t>(c)];
    const float std = opt.std.empty() ? 1.0f : opt.std[static_cast<std::size_t>(c)];
    for (int v = 0; v < 256; ++v)
      tables[static_cast<std::size_t>(c)][static_cast<std::size_t>(v)] = (v / 255.0f - mean) / std;
  }
  return tables;
}

// One channel plane, cropped from the zero-padded source at (dy, dx) and optionally mirrored.
void crop_flip_plane(const uint8_t* source, int height, int width, int padding, int dy, int dx, bool flip,
                     const normalise_table& table, float* out) {
  const float zero = table[0];  // padding is a zero pixel, normalised like any other
  for (int y = 0; y < height; ++y) {
    float* out_row = out + static_cast<std::ptrdiff_t>(y) * width;
    const int sy = y + dy - padding;
    if (sy < 0 || sy >= height) {
      for (int x = 0; x < width; ++x) out_row[x] = zero;
      continue;
    }
    const uint8_t* source_row = source + static_cast<std::ptrdiff_t>(sy) * width;
    for (int x = 0; x < width; ++x) {
      const int sx = (flip ? width - 1 - x : x) + dx - padding;
      out_row[x] = (sx >= 0 && sx < width) ? table[source_row[sx]] : zero;
    }
  }
}

}  // namespace

void check_augment_options(const augment_options& opt, int channels) {
  if (opt.mean.size() != opt.std.size() ||
      (!opt.mean.empty() && opt.mean.size() != static_cast<std::size_t>(channels))) {
    throw std::invalid_argument("normalisation: mean has " + std::to_string(opt.mean.size()) +
                                " entries and std " + std::to_string(opt.std.size()) +
                                ", expected one per channel (" + std::to_string(channels) +
                                ") in each; set data.mean and data.std to match the dataset");
  }
  for (std::size_t c = 0; c < opt.std.size(); ++c) {
    if (!std::isfinite(opt.mean[c])) {
      throw std::invalid_argument("normalisation: mean[" + std::to_string(c) +
                                  "] = " + std::to_string(opt.mean[c]) + " is not finite");
    }
    if (!(opt.std[c] > 0.0f) || !std::isfinite(opt.std[c])) {
      throw std::invalid_argument("normalisation: std[" + std::to_string(c) + "] = " +
                                  std::to_string(opt.std[c]) + ", expected a finite value > 0 (it divides)");
    }
  }
  if (opt.crop_padding < 0) {
    throw std::invalid_argument("augmentation: crop_padding = " + std::to_string(opt.crop_padding) +
                                ", expected ≥ 0 (0 turns random crops off)");
  }
}

void make_batch(const dataset& d, const int64_t* indices, int64_t count, const augment_options& opt,
                bool train, uint64_t seed, int epoch, int64_t first_position, float* images,
                int32_t* labels) {
  check_augment_options(opt, d.channels);
  if (count < 0)
    throw std::invalid_argument("make_batch: count = " + std::to_string(count) + ", expected ≥ 0");
  if (count > 0 && (indices == nullptr || images == nullptr || labels == nullptr)) {
    throw std::invalid_argument("make_batch: null indices, images or labels pointer for a batch of " +
                                std::to_string(count));
  }
  if (d.pixels.size() != static_cast<std::size_t>(d.count * d.image_size()) ||
      d.labels.size() != static_cast<std::size_t>(d.count)) {
    throw std::invalid_argument("make_batch: dataset " + d.name + " holds " +
                                std::to_string(d.pixels.size()) + " pixels and " +
                                std::to_string(d.labels.size()) + " labels, expected " +
                                std::to_string(d.count * d.image_size()) + " and " + std::to_string(d.count));
  }
  for (int64_t i = 0; i < count; ++i) {
    if (indices[i] < 0 || indices[i] >= d.count) {
      throw std::out_of_range("make_batch: indices[" + std::to_string(i) +
                              "] = " + std::to_string(indices[i]) + " is outside " + d.name + " [0, " +
                              std::to_string(d.count) + ")");
    }
  }

  const std::vector<normalise_table> tables = normalise_tables(opt, d.channels);
  const int64_t plane = int64_t{d.height} * d.width;
  const int padding = opt.crop_padding;
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t* source = d.pixels.data() + indices[i] * d.image_size();
    float* out = images + i * d.image_size();
    labels[i] = d.labels[static_cast<std::size_t>(indices[i])];
    if (!train) {
      for (int c = 0; c < d.channels; ++c) {
        const normalise_table& table = tables[static_cast<std::size_t>(c)];
        for (int64_t k = 0; k < plane; ++k) out[c * plane + k] = table[source[c * plane + k]];
      }
      continue;
    }
    // Always three draws in this order, so turning flip on or off leaves the crops unchanged.
    counter_rng rng(seed, rng_stream::augment, epoch, first_position + i);
    const auto window = static_cast<uint64_t>(2 * padding + 1);
    const int dy = static_cast<int>(rng.below(window));
    const int dx = static_cast<int>(rng.below(window));
    const bool flip = opt.flip && (rng.next() >> 63) != 0;
    for (int c = 0; c < d.channels; ++c) {
      crop_flip_plane(source + c * plane, d.height, d.width, padding, dy, dx, flip,
                      tables[static_cast<std::size_t>(c)], out + c * plane);
    }
  }
}

}  // namespace petra::data

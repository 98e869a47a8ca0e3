// Crop windows drawn from counter_rng, and a separable antialiased resampler (horizontal pass into
// a float scratch, then vertical pass straight into normalised channel planes).
#include "datasets/image_transforms.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace petra::data {

void check_resized_crop_bounds(const resized_crop_bounds& b) {
  if (!(b.scale_min > 0 && b.scale_min <= b.scale_max && b.scale_max <= 1)) {
    throw std::invalid_argument("random-resized-crop scale bounds [" + std::to_string(b.scale_min) + ", " +
                                std::to_string(b.scale_max) + "]: expected 0 < min ≤ max ≤ 1");
  }
  if (!(b.ratio_min > 0 && b.ratio_min <= b.ratio_max)) {
    throw std::invalid_argument("random-resized-crop ratio bounds [" + std::to_string(b.ratio_min) + ", " +
                                std::to_string(b.ratio_max) + "]: expected 0 < min ≤ max");
  }
  if (b.attempts < 1) {
    throw std::invalid_argument("random-resized-crop attempts = " + std::to_string(b.attempts) +
                                ", expected ≥ 1");
  }
}

crop_box draw_resized_crop(int width, int height, const resized_crop_bounds& b, counter_rng& rng) {
  const double area = double(width) * height;
  const double log_min = std::log(b.ratio_min), log_max = std::log(b.ratio_max);
  for (int attempt = 0; attempt < b.attempts; ++attempt) {
    const double target = area * (b.scale_min + (b.scale_max - b.scale_min) * uniform01(rng));
    const double ratio = std::exp(log_min + (log_max - log_min) * uniform01(rng));
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target * ratio)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target / ratio)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const auto y = static_cast<int64_t>(rng.below(static_cast<uint64_t>(height - h + 1)));
      const auto x = static_cast<int64_t>(rng.below(static_cast<uint64_t>(width - w + 1)));
      return {double(x), double(y), double(w), double(h)};
    }
  }
  // Fallback: the whole image, narrowed to the nearest allowed ratio, centred.
  int64_t w = width, h = height;
  const double own_ratio = double(width) / height;
  if (own_ratio < b.ratio_min) {
    h = std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(width / b.ratio_min)));
  } else if (own_ratio > b.ratio_max) {
    w = std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(height * b.ratio_max)));
  }
  return {double((width - w) / 2), double((height - h) / 2), double(w), double(h)};
}

crop_box center_crop_box(int width, int height, int resize_size, int crop_size) {
  // The resized image: shorter side resize_size, longer side truncated as torchvision's Resize does.
  const bool landscape = width >= height;
  const int64_t short_side = landscape ? height : width, long_side = landscape ? width : height;
  const int64_t resized_long = resize_size * long_side / short_side;
  const double resized_width = landscape ? double(resized_long) : resize_size;
  const double resized_height = landscape ? resize_size : double(resized_long);
  const double left = std::nearbyint((resized_width - crop_size) / 2.0);
  const double top = std::nearbyint((resized_height - crop_size) / 2.0);
  // Back to source pixels: the resize maps source x to x·resized_width/width.
  const double sx = width / resized_width, sy = height / resized_height;
  return {left * sx, top * sy, crop_size * sx, crop_size * sy};
}

channel_affine normalisation(const std::vector<float>& mean, const std::vector<float>& std) {
  channel_affine a{};
  for (std::size_t c = 0; c < 3; ++c) {
    const float m = mean.empty() ? 0.0f : mean.at(c);
    const float s = std.empty() ? 1.0f : std.at(c);
    a.scale[c] = 1.0f / (255.0f * s);
    a.shift[c] = -m / s;
  }
  return a;
}

namespace {

// Per output pixel along one axis: the first source pixel and normalised weights of its taps.
struct axis_taps {
  std::vector<int> first, count;
  std::vector<float> weights;  // max_taps per output pixel
  int max_taps = 0;
};

axis_taps compute_taps(double start, double size, int in_size, int out_size) {
  const double scale = size / out_size;
  const double filter_scale = std::max(scale, 1.0);  // widen the triangle when shrinking: antialiasing
  const double support = filter_scale;               // the triangle's radius in source pixels
  axis_taps t;
  t.max_taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<std::size_t>(out_size));
  t.count.resize(static_cast<std::size_t>(out_size));
  t.weights.assign(static_cast<std::size_t>(out_size) * t.max_taps, 0.0f);
  for (int i = 0; i < out_size; ++i) {
    const double center = start + (i + 0.5) * scale;
    const int lo = std::max(static_cast<int>(std::floor(center - support + 0.5)), 0);
    const int hi = std::min(static_cast<int>(std::floor(center + support + 0.5)), in_size);
    const int n = std::min(std::max(hi - lo, 1), t.max_taps);
    const int first = std::min(lo, in_size - n);
    double sum = 0;
    float* w = t.weights.data() + static_cast<std::size_t>(i) * t.max_taps;
    for (int k = 0; k < n; ++k) {
      const double d = (first + k + 0.5 - center) / filter_scale;
      w[k] = static_cast<float>(std::max(0.0, 1.0 - std::abs(d)));
      sum += w[k];
    }
    if (sum > 0) {
      for (int k = 0; k < n; ++k) w[k] = static_cast<float>(w[k] / sum);
    } else {
      w[0] = 1.0f;  // a window narrower than a pixel between two centres: take the nearest
    }
    t.first[static_cast<std::size_t>(i)] = first;
    t.count[static_cast<std::size_t>(i)] = n;
  }
  return t;
}

}  // namespace

void resample_to_chw(const rgb_image& image, const crop_box& box, int out_width, int out_height, bool flip,
                     const channel_affine& norm, float* out) {
  if (out_width < 1 || out_height < 1) {
    throw std::invalid_argument("resample_to_chw: output " + std::to_string(out_width) + "×" +
                                std::to_string(out_height) + ", expected ≥ 1×1");
  }
  if (!(box.width > 0 && box.height > 0 && box.x >= 0 && box.y >= 0 &&
        box.x + box.width <= image.width + 1e-6 && box.y + box.height <= image.height + 1e-6)) {
    throw std::invalid_argument("resample_to_chw: box (" + std::to_string(box.x) + ", " +
                                std::to_string(box.y) + ") " + std::to_string(box.width) + "×" +
                                std::to_string(box.height) + " does not lie inside the " +
                                std::to_string(image.width) + "×" + std::to_string(image.height) + " image");
  }
  const axis_taps xs = compute_taps(box.x, box.width, image.width, out_width);
  const axis_taps ys = compute_taps(box.y, box.height, image.height, out_height);
  int row_first = image.height, row_last = 0;  // the rows any vertical tap reads: [row_first, row_last)
  for (int oy = 0; oy < out_height; ++oy) {
    row_first = std::min(row_first, ys.first[static_cast<std::size_t>(oy)]);
    row_last =
        std::max(row_last, ys.first[static_cast<std::size_t>(oy)] + ys.count[static_cast<std::size_t>(oy)]);
  }
  const int rows = row_last - row_first;

  // Horizontal pass over the rows the vertical taps need: rows × out_width × 3.
  std::vector<float> horizontal(static_cast<std::size_t>(rows) * out_width * 3);
  for (int r = 0; r < rows; ++r) {
    const uint8_t* src = image.pixels.data() + static_cast<std::size_t>(row_first + r) * image.width * 3;
    float* dst = horizontal.data() + static_cast<std::size_t>(r) * out_width * 3;
    for (int ox = 0; ox < out_width; ++ox) {
      const float* w = xs.weights.data() + static_cast<std::size_t>(ox) * xs.max_taps;
      const uint8_t* p = src + static_cast<std::size_t>(xs.first[static_cast<std::size_t>(ox)]) * 3;
      float r0 = 0, g0 = 0, b0 = 0;
      for (int k = 0; k < xs.count[static_cast<std::size_t>(ox)]; ++k) {
        r0 += w[k] * p[3 * k];
        g0 += w[k] * p[3 * k + 1];
        b0 += w[k] * p[3 * k + 2];
      }
      dst[3 * ox] = r0;
      dst[3 * ox + 1] = g0;
      dst[3 * ox + 2] = b0;
    }
  }

  // Vertical pass: whole interleaved rows at a time (contiguous, so it vectorises), then
  // normalised into three planes; a flip mirrors the column written.
  const std::size_t plane = static_cast<std::size_t>(out_width) * out_height;
  const std::size_t row_floats = static_cast<std::size_t>(out_width) * 3;
  std::vector<float> sum(row_floats);
  for (int oy = 0; oy < out_height; ++oy) {
    const float* w = ys.weights.data() + static_cast<std::size_t>(oy) * ys.max_taps;
    const int first = ys.first[static_cast<std::size_t>(oy)] - row_first;
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int k = 0; k < ys.count[static_cast<std::size_t>(oy)]; ++k) {
      const float* h = horizontal.data() + static_cast<std::size_t>(first + k) * row_floats;
      const float wk = w[k];
      for (std::size_t j = 0; j < row_floats; ++j) sum[j] += wk * h[j];
    }
    for (int c = 0; c < 3; ++c) {
      float* row = out + c * plane + static_cast<std::size_t>(oy) * out_width;
      const float scale = norm.scale[c], shift = norm.shift[c];
      for (int ox = 0; ox < out_width; ++ox) {
        row[flip ? out_width - 1 - ox : ox] = sum[static_cast<std::size_t>(ox) * 3 + c] * scale + shift;
      }
    }
  }
}

}  // namespace petra::data

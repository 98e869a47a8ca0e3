// The ImageNet transforms: random-resized-crop (train) and resize + center crop (eval) as crop
// windows in source pixels, and the resampler that turns a window into a normalised C×H×W tensor.
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/counter_rng.hpp"
#include "datasets/jpeg.hpp"

namespace petra::data {

/// A window of a source image: columns [x, x + width), rows [y, y + height), in source pixels.
struct crop_box {
  double x = 0, y = 0, width = 0, height = 0;
};

/// Random-resized-crop bounds: the window covers a fraction in [scale_min, scale_max] of the
/// image's area, with width/height in [ratio_min, ratio_max] (drawn log-uniformly).
struct resized_crop_bounds {
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  int attempts = 10;  // tries before falling back to the central crop
};

/// Throws std::invalid_argument unless 0 < scale_min ≤ scale_max ≤ 1, 0 < ratio_min ≤ ratio_max
/// and attempts ≥ 1.
void check_resized_crop_bounds(const resized_crop_bounds& bounds);

/// Uniform in [0, 1) from the top 53 bits of one draw.
inline double uniform01(counter_rng& rng) { return double(rng.next() >> 11) * 0x1.0p-53; }

/// One random-resized-crop window of a width×height image, with integer corners (torchvision's
/// RandomResizedCrop.get_params): up to `attempts` times, area = W·H·U(scale_min, scale_max),
/// r = exp(U(ln ratio_min, ln ratio_max)), w = round(√(area·r)), h = round(√(area/r)); the first
/// that fits inside the image is placed uniformly. Otherwise the central crop of the whole image
/// clamped to the ratio bounds (the whole image when its own ratio is inside them).
crop_box draw_resized_crop(int width, int height, const resized_crop_bounds& bounds, counter_rng& rng);

/// The eval window of a width×height image: what "resize the shorter side to resize_size
/// (longer side ⌊resize·long/short⌋), then center crop crop_size × crop_size" keeps, in source pixels.
crop_box center_crop_box(int width, int height, int resize_size, int crop_size);

/// x ↦ x·scale[c] + shift[c] per channel, for x in 0..255: normalisation (x/255 − mean)/std.
struct channel_affine {
  float scale[3], shift[3];
};

/// The affine map of (x/255 − mean_c)/std_c; mean and std hold 3 entries each (or none: x/255).
channel_affine normalisation(const std::vector<float>& mean, const std::vector<float>& std);

/// Resamples `box` of `image` to out_width × out_height with a triangle (bilinear) filter whose
/// support widens with the downscaling factor, so that shrinking averages every source pixel
/// (antialiased, as PIL's bilinear resize); mirrors left-right when `flip`; writes normalised
/// planes out[c][y][x] (3 × out_height × out_width floats). The box must lie inside the image.
void resample_to_chw(const rgb_image& image, const crop_box& box, int out_width, int out_height, bool flip,
                     const channel_affine& norm, float* out);

}  // namespace petra::data

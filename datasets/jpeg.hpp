// JPEG decoding with libjpeg-turbo's TurboJPEG API: whole images to 8-bit RGB, optionally scaled
// down in the DCT domain (much cheaper than decoding at full size and resizing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace petra::data {

/// A JPEG that cannot be decoded (not a JPEG, corrupt, truncated); the message is libjpeg-turbo's.
class jpeg_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An 8-bit interleaved RGB image: channel c of pixel (x, y) is pixels[(y·width + x)·3 + c].
struct rgb_image {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
};

/// A DCT-domain scaling factor num/denom, one of those TurboJPEG offers (1/8, 2/8, …, 16/8).
struct jpeg_scale {
  int num = 1, denom = 1;
};

/// What a JPEG's header says: full-size dimensions and the colour space of the stored components.
struct jpeg_header {
  int width = 0, height = 0;
  bool grayscale = false;  // one component: decoded with R = G = B
  bool cmyk = false;       // CMYK or YCCK (four components): converted to RGB, see jpeg_decoder::decode
};

/// The width or height TurboJPEG gives a dimension at `scale`: ⌈dim·num/denom⌉.
int scaled_size(int dim, jpeg_scale scale);

/// The smallest of 1/2, 1/4, 1/8 with region_width·s ≥ need_width and region_height·s ≥ need_height,
/// so that the region still holds at least the target's pixels after scaled decoding; 1/1 when none
/// qualifies (the region is less than twice the target). The other factors TurboJPEG offers
/// (7/8 … 3/8) decode slower than the full size and are never chosen.
jpeg_scale choose_jpeg_scale(double region_width, double region_height, int need_width, int need_height);

/// One TurboJPEG decompressor. Not thread-safe: each thread owns its own (creating one is cheap).
class jpeg_decoder {
 public:
  jpeg_decoder();
  ~jpeg_decoder();
  jpeg_decoder(const jpeg_decoder&) = delete;
  jpeg_decoder& operator=(const jpeg_decoder&) = delete;

  /// Reads the header; throws jpeg_error when the bytes are not a JPEG libjpeg-turbo can read, or
  /// when it claims more than 2^28 pixels (a corrupt header, not a photo).
  jpeg_header read_header(const uint8_t* data, std::size_t size);

  /// Decodes the whole image at `scale` into `out` (resized to ⌈W·s⌉ × ⌈H·s⌉ × 3). Grayscale
  /// images give R = G = B; CMYK/YCCK images are decoded to CMYK as libjpeg-turbo stores it
  /// (Adobe's inverted convention) and converted with R = round(C·K/255), G = round(M·K/255),
  /// B = round(Y·K/255), the conversion libjpeg-turbo's own tools use. Throws jpeg_error on a
  /// corrupt or truncated image ("Premature end of JPEG file"); other libjpeg warnings (such as
  /// extraneous bytes before a marker) leave a complete image and are not errors.
  void decode(const uint8_t* data, std::size_t size, jpeg_scale scale, rgb_image& out);

 private:
  [[noreturn]] void fail(const char* what);

  void* handle_;               // tjhandle
  std::vector<uint8_t> cmyk_;  // scratch for CMYK decoding
};

}  // namespace petra::data
